package main

import (
	"context"
	"sync"
	"time"
)

// A fifoBackend is a server with capacity slots, each serving one request at
// a time for the base latency, behind a FIFO queue: a thread pool behind its
// accept queue. Past its capacity it does not slow down, it makes requests
// wait: the round trip grows with the queue and the throughput stays at
// capacity/base. Like backend, it does not see its caller leave: a request
// whose caller gave up is still queued and served to its end, and takes a slot
// from those behind it.
type fifoBackend struct {
	mu       sync.Mutex
	capacity int                      // the current phase's
	base     time.Duration            // the current phase's: the service of a request that starts now
	serving  map[*fifoJob]*time.Timer // in a slot, each with the timer that ends its service
	queue    []*fifoJob               // waiting for a slot, first come first
	stopped  bool                     // after stop: nothing starts or completes
}

// A fifoJob is one request at the backend.
type fifoJob struct {
	done chan struct{} // closed when it completes
}

// newFIFOBackend returns a FIFO backend in the state of p, with no request.
func newFIFOBackend(p phase) *fifoBackend {
	return &fifoBackend{capacity: p.capacity, base: p.base, serving: make(map[*fifoJob]*time.Timer)}
}

func (b *fifoBackend) call(ctx context.Context) error {
	j := &fifoJob{done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, j)
	b.startLocked()
	b.mu.Unlock()
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startLocked puts the requests at the head of the queue into the free slots.
// Called with mu held.
func (b *fifoBackend) startLocked() {
	for !b.stopped && len(b.serving) < b.capacity && len(b.queue) > 0 {
		j := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.serving[j] = time.AfterFunc(b.base, func() { b.complete(j) })
	}
}

// complete ends j's service and gives its slot to the next in the queue.
func (b *fifoBackend) complete(j *fifoJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	delete(b.serving, j)
	close(j.done)
	b.startLocked()
}

// setPhase changes the capacity and the base latency from now on: requests in
// a slot keep their service time; a capacity that fell lets them finish, one
// that rose starts queued requests at once.
func (b *fifoBackend) setPhase(p phase) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.capacity, b.base = p.capacity, p.base
	b.startLocked()
}

func (b *fifoBackend) inFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.serving) + len(b.queue)
}

func (b *fifoBackend) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	for _, t := range b.serving {
		t.Stop()
	}
}
