// Command admission shows what admission control is for. It overloads one
// in-process server three times with the same open-loop arrivals (a fixed rate,
// about 2.5 times what the server can serve, whatever happens to earlier
// requests) and compares how it copes:
//
//   - a plain semaphore bounding the number of running requests, with an
//     unbounded FIFO queue;
//   - an admission.Controller bounding count, memory and CPU, without shedding;
//   - the same controller with a queue bound and preemptive shedding.
//
// Each request has a memory cost (most are small, some large, so memory binds
// as well as count), needs the CPU briefly, waits on a backend call in between
// (under Await, so it does not hold others back for CPU meanwhile), and has one
// deadline for its whole life: queueing and running. It is counted once, as
// served in time, refused (at once for a full queue, or shed at the head of the
// queue), timed out waiting, or timed out running. For each server the command
// prints the offered load, the goodput (requests served within their deadline,
// per second), those counts, the latency percentiles of the served requests,
// the peak memory held by running requests, and the server's state when its
// queue was longest.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

// The server and its requests.
const (
	countLimit  = 16      // requests running at once
	memoryLimit = 4 << 20 // bytes the running requests may hold
	cpuLimit    = 2       // requests using the CPU at once (the machine's cores)

	smallCost = 64 << 10 // 7 requests in 10
	largeCost = 1 << 20  // 3 in 10

	cpuWork = 500 * time.Microsecond // computation (on an idle core), before and again after the backend call
	backend = 30 * time.Millisecond  // the backend call, off the CPU
	budget  = 120 * time.Millisecond

	queueBound = 16  // with shedding: requests waiting at most
	shedFactor = 0.5 // with shedding: refuse at the head with less than half the budget left
)

// service is how long a request runs when nothing competes with it.
const service = 2*cpuWork + backend

// capacity is what the server can serve per second: memory binds before count,
// since an average request holds 0.7 x 64K + 0.3 x 1M = 352K. (The CPU, at 1 ms of
// computation a request, would allow about 2000/s on two idle cores: it binds only
// when the machine is busy with other work.)
func capacity() float64 {
	avgCost := 0.7*smallCost + 0.3*largeCost
	concurrent := min(countLimit, memoryLimit/avgCost)
	return concurrent / service.Seconds()
}

// load is one run's arrivals.
type load struct {
	duration time.Duration // how long requests arrive
	rate     float64       // arrivals per second
}

func main() {
	l := load{duration: 2500 * time.Millisecond, rate: 2.5 * capacity()}
	if _, err := run(os.Stdout, l); err != nil {
		fmt.Fprintln(os.Stderr, "admission:", err)
		os.Exit(1)
	}
}

// outcome is how one request ended; each is counted exactly once.
type outcome int

const (
	served         outcome = iota // completed within its deadline
	refused                       // queue full, or shed at the head
	timedOutQueued                // its deadline passed while it waited
	timedOutActive                // its deadline passed while it ran
	outcomes
)

var outcomeNames = [outcomes]string{"served in time", "refused", "timed out waiting", "timed out running"}

// result is what one server did with one run's arrivals.
type result struct {
	name       string
	offered    int
	counts     [outcomes]int
	latencies  []time.Duration // of served requests, sorted
	peakMemory int64           // most bytes held by running requests at once
	peakQueued int
	peakDump   string
	counters   string
	elapsed    time.Duration // from the first arrival to the last request's end
}

// goodput is served requests per second of arrivals.
func (r *result) goodput(l load) float64 { return float64(r.counts[served]) / l.duration.Seconds() }

// server is one way of deciding which requests run.
type server interface {
	// serve runs one request of the given memory cost until it ends, and says how
	// and when it ended; ctx carries its deadline. An error is a bug in the demo.
	serve(ctx context.Context, cost int64, inFlight *memoryGauge) (outcome, time.Time, error)
	// queued is how many requests wait now; dump describes the server's state;
	// counters summarises its decisions.
	queued() int
	dump() string
	counters() string
	// drained reports an error unless every resource is back.
	drained() error
}

func run(out io.Writer, l load) ([]result, error) {
	calibrate()
	fmt.Fprintf(out, "server: %d requests, %s of memory, %d on the CPU at once; a request is %v of CPU, a %v backend call, %v of CPU; deadline %v\n",
		countLimit, formatMiB(memoryLimit), cpuLimit, cpuWork, backend, cpuWork, budget)
	fmt.Fprintf(out, "capacity about %.0f requests/s (memory binds); offered %.0f/s for %v, open loop\n\n",
		capacity(), l.rate, l.duration)
	servers := []func() (string, server){
		func() (string, server) {
			return fmt.Sprintf("plain semaphore (%d), unbounded queue", countLimit), newPlain()
		},
		func() (string, server) { return "admission, no shedding", newControlled(false, false) },
		func() (string, server) {
			return fmt.Sprintf("admission, queue bound %d, shed factor %.1f", queueBound, shedFactor), newControlled(true, false)
		},
		func() (string, server) {
			return "admission, its defaults (the deadline rule)", newControlled(false, true)
		},
	}
	var results []result
	for _, mk := range servers {
		name, srv := mk()
		r, err := overload(srv, l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r.name = name
		report(out, &r, l)
		results = append(results, r)
	}
	summary(out, results, l)
	return results, nil
}

// overload sends open-loop arrivals to srv: request i arrives at i/rate after the
// start, whether or not earlier ones have finished.
func overload(srv server, l load) (result, error) {
	var (
		r        result
		mu       sync.Mutex
		firstErr error
		inFlight memoryGauge
		wg       sync.WaitGroup
	)
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() { // keep the state at the longest queue
		defer close(watched)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-tick.C:
			}
			if q := srv.queued(); q > r.peakQueued {
				r.peakQueued, r.peakDump = q, srv.dump()
			}
		}
	}()

	interval := time.Duration(float64(time.Second) / l.rate)
	start := time.Now()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) >= l.duration {
			break
		}
		time.Sleep(time.Until(at)) // when behind, the late arrivals go at once: open loop
		r.offered++
		cost := int64(smallCost)
		if i%10 < 3 {
			cost = largeCost
		}
		wg.Go(func() {
			ctx, cancel := context.WithDeadline(context.Background(), at.Add(budget))
			defer cancel()
			o, done, err := srv.serve(ctx, cost, &inFlight)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmpOr(firstErr, err)
				return
			}
			r.counts[o]++
			if o == served {
				r.latencies = append(r.latencies, done.Sub(at))
			}
		})
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	r.counters = srv.counters()
	close(stopWatch)
	<-watched
	if firstErr != nil {
		return r, firstErr
	}
	slices.Sort(r.latencies)
	r.peakMemory = inFlight.peak.Load()
	total := 0
	for _, n := range r.counts {
		total += n
	}
	switch {
	case total != r.offered:
		return r, fmt.Errorf("%d requests offered but %d counted", r.offered, total)
	case inFlight.now.Load() != 0:
		return r, fmt.Errorf("%d bytes still held by running requests", inFlight.now.Load())
	}
	return r, srv.drained()
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// memoryGauge follows the bytes held by running requests, and their peak.
type memoryGauge struct{ now, peak atomic.Int64 }

func (g *memoryGauge) add(n int64) {
	now := g.now.Add(n)
	for p := g.peak.Load(); now > p && !g.peak.CompareAndSwap(p, now); p = g.peak.Load() {
	}
}

// work is a request's life once it runs: CPU, the backend call, CPU. With a permit
// it marks its CPU use, and awaits the backend, so admission knows what it waits
// for. It returns how the request ended and when its response was ready.
func work(ctx context.Context, p *admission.Permit) (outcome, time.Time) {
	if p != nil {
		done := p.NeedCPU()
		defer done()
	}
	burn(cpuWork)
	endAwait := func() {}
	if p != nil {
		endAwait = p.Await()
		defer endAwait() // for the early return; done functions run once
	}
	t := time.NewTimer(backend)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return timedOutActive, time.Now() // the backend call is abandoned at the deadline
	}
	endAwait()
	burn(cpuWork)
	now := time.Now()
	if deadline, _ := ctx.Deadline(); now.After(deadline) {
		return timedOutActive, now
	}
	return served, now
}

// burn does as much computation as takes d on an idle core. On a busy machine,
// or with many requests computing at once, it takes longer: it is work, not time.
func burn(d time.Duration) {
	x := uint64(d)
	for range int64(d) * opsPerNanosecond.Load() / 1000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	sink.Store(x)
}

var (
	opsPerNanosecond atomic.Int64 // x 1000, set by calibrate
	sink             atomic.Uint64
)

// calibrate measures how much burn computes per nanosecond, taking the best of a
// few tries so that a busy moment does not make the work smaller.
func calibrate() {
	opsPerNanosecond.Store(1000)
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		burn(2 * time.Millisecond)
		best = min(best, time.Since(start))
	}
	opsPerNanosecond.Store(int64(float64(2*time.Millisecond) / float64(best) * 1000))
}

// plain bounds running requests with a semaphore of countLimit units and lets
// everyone else wait in its FIFO queue until served or out of time.
type plain struct{ sem *semaphore.Semaphore }

func newPlain() *plain { return &plain{semaphore.New(countLimit, semaphore.WithName("api"))} }

func (s *plain) serve(ctx context.Context, cost int64, inFlight *memoryGauge) (outcome, time.Time, error) {
	if err := s.sem.Acquire(ctx, 1); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return timedOutQueued, time.Now(), nil
		}
		return 0, time.Time{}, err
	}
	defer s.sem.Release(1)
	inFlight.add(cost)
	defer inFlight.add(-cost)
	o, end := work(ctx, nil)
	return o, end, nil
}

func (s *plain) queued() int { return s.sem.Waiters() }

func (s *plain) dump() string {
	return fmt.Sprintf("%d of %d units available, %d waiting\n", s.sem.Available(), s.sem.Capacity(), s.sem.Waiters())
}

func (s *plain) counters() string { return "" }

func (s *plain) drained() error {
	if s.sem.Available() != countLimit || s.sem.Waiters() != 0 {
		return fmt.Errorf("semaphore not drained: %v", s.sem)
	}
	return nil
}

// controlled admits requests through an admission.Controller.
type controlled struct{ ctrl *admission.Controller }

// newControlled returns a controller with shedding by a queue bound and a
// shed factor or none, and with the deadline rule, admission's default, or
// without it.
func newControlled(shedding, deadlineRule bool) *controlled {
	opts := []admission.Option{admission.WithName("api"), admission.WithCPUConcurrency(cpuLimit)}
	if shedding {
		opts = append(opts, admission.WithMaxWaiters(queueBound), admission.WithShedFactor(shedFactor))
	}
	if !deadlineRule {
		opts = append(opts, admission.WithoutDeadlineShedding())
	}
	return &controlled{admission.New(admission.Resources{Count: countLimit, Memory: memoryLimit}, opts...)}
}

func (s *controlled) serve(ctx context.Context, cost int64, inFlight *memoryGauge) (outcome, time.Time, error) {
	p, err := s.ctrl.Acquire(ctx, "query", cost)
	if err != nil {
		switch o, _ := semaphore.OutcomeOf(err); o {
		case semaphore.QueueFull, semaphore.Shed:
			return refused, time.Now(), nil
		case semaphore.TimedOut:
			return timedOutQueued, time.Now(), nil
		}
		return 0, time.Time{}, err
	}
	defer p.Release()
	inFlight.add(cost)
	defer inFlight.add(-cost)
	o, end := work(ctx, p)
	return o, end, nil
}

func (s *controlled) queued() int  { return s.ctrl.Stats().Waiters }
func (s *controlled) dump() string { return s.ctrl.Diagnostics(6) }

func (s *controlled) counters() string {
	st := s.ctrl.Stats()
	return fmt.Sprintf("acquired %d (%d at once); queued %d, because of count %d, memory %d, CPU %d; rejected %d; shed %d; timed out in the queue %d",
		st.Acquired, st.AcquiredImmediately, st.QueuedForAdmission, st.QueuedBecauseCount, st.QueuedBecauseMemory,
		st.QueuedBecauseCPU, st.Rejected, st.Shed, st.TimedOut)
}

func (s *controlled) drained() error {
	st := s.ctrl.Stats()
	if st.Held != (admission.Resources{}) || st.CurrentPermits != 0 || st.Waiters != 0 || st.NeedCPUPermits != 0 {
		return fmt.Errorf("controller not drained:\n%s", s.ctrl.Diagnostics(0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.ctrl.Break(nil)
	return s.ctrl.Drain(ctx)
}

func report(out io.Writer, r *result, l load) {
	fmt.Fprintf(out, "== %s\n", r.name)
	fmt.Fprintf(out, "offered %d (%.0f/s); goodput %.0f/s;", r.offered, float64(r.offered)/l.duration.Seconds(), r.goodput(l))
	for o, name := range outcomeNames {
		fmt.Fprintf(out, " %s %d;", name, r.counts[o])
	}
	fmt.Fprintf(out, " all done after %v\n", r.elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "latency of served requests: p50 %v, p90 %v, p99 %v\n",
		pct(r.latencies, 50), pct(r.latencies, 90), pct(r.latencies, 99))
	fmt.Fprintf(out, "peak memory held by running requests: %s (limit %s)\n", formatMiB(r.peakMemory), formatMiB(memoryLimit))
	if r.counters != "" {
		fmt.Fprintln(out, r.counters)
	}
	fmt.Fprintf(out, "at the longest queue (%d waiting):\n%s\n", r.peakQueued, r.peakDump)
}

func summary(out io.Writer, results []result, l load) {
	fmt.Fprintf(out, "%-44s %9s %9s %7s %9s %9s %8s %8s %8s\n",
		"server", "offered/s", "goodput/s", "refused", "t/o wait", "t/o run", "p50", "p99", "peak mem")
	for _, r := range results {
		fmt.Fprintf(out, "%-44s %9.0f %9.0f %7d %9d %9d %8v %8v %8s\n", r.name,
			float64(r.offered)/l.duration.Seconds(), r.goodput(l), r.counts[refused], r.counts[timedOutQueued],
			r.counts[timedOutActive], pct(r.latencies, 50), pct(r.latencies, 99), formatMiB(r.peakMemory))
	}
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100].Round(time.Millisecond)
}

func formatMiB(n int64) string { return fmt.Sprintf("%.1fM", float64(n)/(1<<20)) }
