package semdebug

import (
	"fmt"
	"time"
)

// The sampler records the history the charts draw. It runs only while someone
// needs it: while an object's page is being viewed (each view leases sampling of
// that object for viewLease), or while a Record call has not been stopped. When
// no object needs sampling, its goroutine exits; the next lease starts a new one.
// A registered object nobody looks at is therefore never read at all.

// sampleEvery is the interval between samples, and viewLease how long a view of
// an object's page keeps it sampled: the page refreshes itself well within it, so
// sampling lasts as long as the page is open and refreshing, and stops soon after.
var (
	sampleEvery = time.Second
	viewLease   = time.Minute
)

// samplerState is the sampler's part of the registry, guarded by registry.mu.
type samplerState struct {
	running bool          // a sampler goroutine is running and will look at the entries again
	wake    chan struct{} // buffered 1: tells the sampler to look at the entries now; fixed
}

// wakeSamplerLocked makes a running sampler look at the entries at once rather
// than at its next tick, after something stopped needing it, so that it exits
// promptly once nothing does. r.mu is held.
func (r *registry) wakeSamplerLocked() {
	if r.sampler.running {
		select {
		case r.sampler.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// Record samples p's state into the history its page charts, every second, until
// stop is called: the charts then cover the time before anyone opened the page,
// for an object worth watching before it stalls. p must have been registered;
// Record panics otherwise. stop is idempotent.
func Record[T any, P interface {
	*T
	Limiter
}](p P) (stop func()) {
	return recordPtr[T](defaultRegistry, p)
}

func recordPtr[T any, P limiterPtr[T]](r *registry, p P) func() {
	e := findPtr(r, (*T)(p))
	if e == nil {
		panic(fmt.Sprintf("semdebug: Record(%T %p): not registered", p, p))
	}
	r.mu.Lock()
	e.watched++
	r.startSamplerLocked()
	r.mu.Unlock()
	stopped := false
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !stopped {
			stopped = true
			e.watched--
			r.wakeSamplerLocked()
		}
	}
}

// leaseSampling keeps e sampled for viewLease from now.
func (r *registry) leaseSampling(e *entry) {
	until := time.Now().Add(viewLease).UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	e.lease = max(e.lease, until)
	r.startSamplerLocked()
}

func (r *registry) startSamplerLocked() {
	if !r.sampler.running {
		r.sampler.running = true
		go r.sample()
	}
}

// sample is the sampler goroutine: each tick it reads every entry that needs
// sampling, and exits when none does (deciding so under r.mu, where leases are
// taken, so that a lease taken meanwhile starts a new goroutine).
func (r *registry) sample() {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	var due []*entry
	for {
		r.mu.Lock()
		now := time.Now().UnixNano()
		due = due[:0]
		for _, e := range r.entries {
			if e.watched > 0 || e.lease > now {
				due = append(due, e)
			}
		}
		if len(due) == 0 {
			r.sampler.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		for _, e := range due {
			if l := e.load(); l != nil {
				e.obs.read(l, true)
			}
		}
		select {
		case <-tick.C:
		case <-r.sampler.wake:
		}
	}
}
