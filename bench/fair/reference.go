package main

import (
	"context"
	"sync"
)

// reference is the fair limit's order written as plainly as possible: weighted
// fair queuing over one limit under one mutex, a FIFO line per tenant, and no
// level per tenant (nor guarantees). A tenant's start tag is the virtual time at
// which its last grant ends, but no earlier than the limit's units, over its
// weight, before the virtual time now; a grant of n units moves the virtual
// time to its start tag if that is later, and the tenant's to the start tag
// plus n over its weight. It tells what the policy gives from what keyed's
// implementation of it gives.
type reference struct {
	mu     sync.Mutex
	limit  int64
	free   int64
	vnow   float64
	seq    uint64
	flows  map[string]*refFlow
	weight func(string) int64
}

type refFlow struct {
	weight  float64
	vfinish float64
	line    []*refWaiter
}

type refWaiter struct {
	n       int64
	seq     uint64
	ready   chan struct{}
	granted bool
}

func newReference(limit int64, weight func(string) int64) *reference {
	return &reference{limit: limit, free: limit, flows: map[string]*refFlow{}, weight: weight}
}

func (r *reference) acquire(ctx context.Context, tenant string, n int64) (func(), error) {
	release := func() {
		r.mu.Lock()
		r.free += n
		r.dispatch()
		r.mu.Unlock()
	}
	r.mu.Lock()
	f := r.flows[tenant]
	if f == nil {
		f = &refFlow{weight: float64(r.weight(tenant)), vfinish: r.vnow}
		r.flows[tenant] = f
	}
	if !r.waiting() && r.free >= n {
		r.free -= n
		r.mu.Unlock()
		return release, nil
	}
	w := &refWaiter{n: n, seq: r.seq, ready: make(chan struct{})}
	r.seq++
	f.line = append(f.line, w)
	r.dispatch()
	r.mu.Unlock()
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.granted { // granted as its context ended: the units go back
		r.free += n
		f.vfinish -= float64(n) / f.weight
		r.dispatch()
		return nil, ctx.Err()
	}
	for i, x := range f.line {
		if x == w {
			f.line = append(f.line[:i], f.line[i+1:]...)
			break
		}
	}
	r.dispatch()
	return nil, ctx.Err()
}

func (r *reference) waiting() bool {
	for _, f := range r.flows {
		if len(f.line) > 0 {
			return true
		}
	}
	return false
}

func (r *reference) tag(f *refFlow) float64 {
	return max(f.vfinish, r.vnow-float64(r.limit)/f.weight)
}

// dispatch grants the head of the line of the tenant with the earliest start
// tag (the older head on a tie) while it fits. r.mu must be held.
func (r *reference) dispatch() {
	for {
		var best *refFlow
		for _, f := range r.flows {
			if len(f.line) == 0 {
				continue
			}
			if best == nil || r.tag(f) < r.tag(best) || r.tag(f) == r.tag(best) && f.line[0].seq < best.line[0].seq {
				best = f
			}
		}
		if best == nil || best.line[0].n > r.free {
			return
		}
		w := best.line[0]
		best.line = best.line[1:]
		tag := r.tag(best)
		r.vnow = max(r.vnow, tag)
		best.vfinish = tag + float64(w.n)/best.weight
		r.free -= w.n
		w.granted = true
		close(w.ready)
	}
}
