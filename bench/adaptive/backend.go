package main

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"
)

// A server is a backend the strategies call: its phase changes during a run.
type server interface {
	// call sends a request and waits for its answer or for ctx to end,
	// whichever comes first; in the second case the request stays at the
	// backend to its end, as at a server that does not see its caller leave.
	call(ctx context.Context) error
	setPhase(p phase) // the capacity and base latency from now on
	inFlight() int    // requests at the backend, served or queued there
	stop()            // stops the clock: the requests still there never complete
}

// A serverKind is one model of a backend.
type serverKind uint8

const (
	thrashing serverKind = iota // processor sharing whose throughput falls past its capacity (backend)
	fifo                        // capacity slots with a FIFO queue in front (fifoBackend)
)

func (k serverKind) String() string {
	if k == fifo {
		return "a FIFO backend"
	}
	return "a backend that thrashes"
}

// describe is the report's line on the backend.
func (k serverKind) describe() string {
	if k == fifo {
		return "FIFO: C slots, each serving one request at the base latency, behind a FIFO queue; it serves a request whose caller left to its end."
	}
	return fmt.Sprintf("processor sharing; past its capacity C, n in flight share a throughput of C/(1+%.2f(n-C)) at base latency; it serves a request whose caller left to its end.", thrash)
}

// new returns a backend of this kind in the state of p.
func (k serverKind) new(p phase) server {
	if k == fifo {
		return newFIFOBackend(p)
	}
	return newBackend(p)
}

// thrash is the thrashing backend's cost per request in flight beyond its
// capacity: with n > C in flight it serves C/(1+thrash*(n-C)) requests' worth
// at once, shared by the n. At 0.01, a limit of 4x a capacity of 10 loses 23%
// of the throughput (and makes every request 5x slower), 2x a capacity of 40
// loses 29%, and a limit 25% above 40 loses 9%: a wrong limit costs goodput,
// not only latency, as a real server's contention, context switches and cache
// misses do.
const thrash = 0.01

// A backend is a server modelled as processor sharing: each request brings
// the phase's base latency of work; up to capacity requests in flight, each is
// served at full speed; past it, the n in flight share a service rate that
// itself falls with every request beyond capacity (see thrash), so each
// request's latency keeps changing with what is in flight until it completes.
//
// The backend does not see its caller leave: a request whose caller gave up
// (its deadline passed) is served to the end all the same, as a server that
// does not propagate cancellation does, and keeps costing the others.
//
// The model keeps one virtual clock, work: the service each request in flight
// has received since the backend started, in seconds at full speed. A request
// entering at work w with s of service to receive completes when work reaches
// w+s; work advances at the current per-request speed. A request entering or
// leaving, or the phase changing, only changes that speed, so the backend keeps
// its requests in a heap by completion and one timer for the first.
type backend struct {
	mu       sync.Mutex
	capacity int           // the current phase's
	base     time.Duration // the current phase's: the service a request entering now brings
	work     float64       // the virtual clock, in seconds of service
	at       time.Time     // when work was last advanced
	jobs     jobs          // in flight, by completion
	timer    *time.Timer   // fires at the first completion; nil after stop
}

// A job is one request in flight.
type job struct {
	finish float64       // the value of work at which it completes
	done   chan struct{} // closed when it completes
}

// jobs is a min-heap of jobs by finish.
type jobs []*job

func (h jobs) Len() int           { return len(h) }
func (h jobs) Less(i, j int) bool { return h[i].finish < h[j].finish }
func (h jobs) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *jobs) Push(x any)        { *h = append(*h, x.(*job)) }
func (h *jobs) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return j
}

// newBackend returns a backend in the state of p, with no request in flight.
func newBackend(p phase) *backend {
	b := &backend{capacity: p.capacity, base: p.base, at: time.Now()}
	b.timer = time.AfterFunc(time.Hour, b.complete)
	b.timer.Stop()
	return b
}

// speed is the rate at which each of n requests in flight is served, in
// seconds of service per second.
func (b *backend) speed(n int) float64 {
	if n <= b.capacity {
		return 1
	}
	c := float64(b.capacity)
	return c / (1 + thrash*(float64(n)-c)) / float64(n)
}

// call sends a request and waits for its answer or for ctx to end, whichever
// comes first; in the second case the request stays in flight to its end.
func (b *backend) call(ctx context.Context) error {
	j := &job{done: make(chan struct{})}
	b.mu.Lock()
	b.advance(time.Now())
	j.finish = b.work + b.base.Seconds()
	heap.Push(&b.jobs, j)
	b.schedule()
	b.mu.Unlock()
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setPhase changes the capacity and base latency from now on. The requests in
// flight keep the work they brought.
func (b *backend) setPhase(p phase) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(time.Now())
	b.capacity, b.base = p.capacity, p.base
	b.schedule()
}

// inFlight returns the number of requests being served.
func (b *backend) inFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.jobs)
}

// stop stops the timer: the requests still in flight never complete.
func (b *backend) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer.Stop()
	b.timer = nil
}

// complete is the timer's function: it completes the requests due.
func (b *backend) complete() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer == nil {
		return
	}
	b.advance(time.Now())
	// A request is due when less than a microsecond of its service is left:
	// the timer's duration is rounded to the nanosecond. Past the capacity a
	// microsecond of service takes longer (up to tens of microseconds at the
	// loads measured), still far below anything measured.
	for len(b.jobs) > 0 && b.jobs[0].finish <= b.work+1e-6 {
		close(heap.Pop(&b.jobs).(*job).done)
	}
	b.schedule()
}

// advance moves the virtual clock to now at the speed of the requests in
// flight since the last change. Called with mu held.
func (b *backend) advance(now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.work += d.Seconds() * b.speed(len(b.jobs))
		b.at = now
	}
}

// schedule sets the timer to the first completion at the current speed.
// Called with mu held, after advance. A timer function already running for an
// earlier setting finds nothing due, or what is due, and schedules again: it
// is harmless.
func (b *backend) schedule() {
	if b.timer == nil || len(b.jobs) == 0 {
		return
	}
	left := (b.jobs[0].finish - b.work) / b.speed(len(b.jobs))
	b.timer.Reset(time.Duration(max(0, left) * float64(time.Second)))
}
