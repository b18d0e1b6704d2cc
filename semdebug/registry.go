package semdebug

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"weak"
)

// defaultRegistry holds what Register registers; Handler shows it.
var defaultRegistry = newRegistry()

// Register adds p, any Limiter, to the page and returns a function that removes
// it: the page shows p's Reading and its Diagnostics. Register panics if p is
// nil.
//
// The page holds p weakly: registering does not keep p alive, and once p is
// unreachable it leaves the page by itself, so calling unregister is needed only
// to remove p earlier. Registering an object twice shows it once; it leaves the
// page when every registration is undone (or when it is collected). unregister
// is idempotent.
//
// Registering costs nothing on p's own paths: nothing is read until someone
// opens the page.
func Register[T any, P interface {
	*T
	Limiter
}](p P) (unregister func()) {
	return registerPtr[T](defaultRegistry, p)
}

// limiterPtr is what Register and Record take: a pointer, which the page can
// hold weakly, to a Limiter.
type limiterPtr[T any] interface {
	*T
	Limiter
}

// registry is the set of registered objects, with the sampler that records their
// history while someone watches them.
type registry struct {
	mu      sync.Mutex
	nextID  uint64            // guarded by mu; ids are never reused
	entries map[uint64]*entry // guarded by mu; registered objects not yet collected
	byPtr   map[any]*entry    // guarded by mu; the same entries, by weak pointer
	sampler samplerState      // guarded by mu; see sampler.go
}

func newRegistry() *registry {
	return &registry{entries: map[uint64]*entry{}, byPtr: map[any]*entry{},
		sampler: samplerState{wake: make(chan struct{}, 1)}}
}

// entry is one registered object.
type entry struct {
	id       uint64
	key      any            // the weak.Pointer, key of byPtr; fixed
	load     func() Limiter // the object, or nil once it was collected; fixed
	typeName string         // the object's type, its kind when its Reading names none; fixed

	refs    int             // registrations not undone; guarded by registry.mu
	cleanup runtime.Cleanup // removes the entry when the object is collected; fixed
	watched int             // Record calls not stopped; guarded by registry.mu
	lease   int64           // sample until then, in unix nanoseconds; guarded by registry.mu

	obs observation // guarded by its own lock; see observe.go
}

func registerPtr[T any, P limiterPtr[T]](r *registry, p P) func() {
	if p == nil {
		panic(fmt.Sprintf("semdebug: Register(%T(nil)): nothing to show", p))
	}
	wp := weak.Make((*T)(p))
	r.mu.Lock()
	e := r.byPtr[wp]
	if e == nil {
		r.nextID++
		e = &entry{id: r.nextID, key: wp, typeName: strings.TrimPrefix(fmt.Sprintf("%T", p), "*"), load: func() Limiter {
			q := wp.Value()
			if q == nil {
				return nil
			}
			return P(q)
		}}
		// The cleanup gets the id, never p: a reference to p would keep it alive.
		e.cleanup = runtime.AddCleanup((*T)(p), r.collected, e.id)
		r.entries[e.id] = e
		r.byPtr[wp] = e
	}
	e.refs++
	r.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { r.unregister(e) }) }
}

// unregister undoes one registration of e.
func (r *registry) unregister(e *entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries[e.id] != e {
		return // collected meanwhile
	}
	if e.refs--; e.refs == 0 {
		e.cleanup.Stop()
		r.remove(e)
	}
}

// collected removes the entry of an object the collector found unreachable.
func (r *registry) collected(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.entries[id]; e != nil {
		r.remove(e)
	}
}

// remove drops e; r.mu is held.
func (r *registry) remove(e *entry) {
	delete(r.entries, e.id)
	delete(r.byPtr, e.key)
	r.wakeSamplerLocked()
}

// list returns the registered entries in id order.
func (r *registry) list() []*entry {
	r.mu.Lock()
	es := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		es = append(es, e)
	}
	r.mu.Unlock()
	slices.SortFunc(es, func(a, b *entry) int { return cmp.Compare(a.id, b.id) })
	return es
}

// lookup returns the entry with the given id, or nil.
func (r *registry) lookup(id uint64) *entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries[id]
}

// findPtr returns the entry of p, or nil if p is not registered.
func findPtr[T any](r *registry, p *T) *entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byPtr[weak.Make(p)]
}
