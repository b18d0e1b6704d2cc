package keyed

import "github.com/fairsem/semaphore"

// An Observer is told how each call that could not be granted its key's units at
// once ended, with the key, and about Break. It sees the key level only: waits at
// the global semaphore are reported by the global's own observer
// (semaphore.WithObserver), which its owner sets.
//
// The methods run synchronously on the goroutine that made the call (WaitEnded)
// or that called Break (Broken), with no lock of the set held; they delay their
// caller, so they must be quick and must not block. They may run concurrently.
type Observer interface {
	// WaitEnded is called once for every Acquire and AcquireTimeout that was not
	// granted the key's units at once, as semaphore.Observer.WaitEnded is for one
	// semaphore.
	WaitEnded(s *Set, key string, e semaphore.WaitEvent)
	// Broken is called once, by the first Break, after every key and the global
	// semaphore were broken.
	Broken(s *Set, cause error)
}

// keyObserver adapts a key's semaphore's observer to the set's: it is made
// with the entry, only when the set has an observer.
type keyObserver struct {
	set *Set
	e   *entry
}

// WaitEnded reports a wait at the key's semaphore as the key's. The entry serves
// the key while a call waits on its semaphore.
func (o *keyObserver) WaitEnded(_ *semaphore.Semaphore, ev semaphore.WaitEvent) {
	o.set.observer.WaitEnded(o.set, o.e.key, ev)
}

// Broken is the set's to report, once for all keys (see Set.Break).
func (o *keyObserver) Broken(*semaphore.Semaphore, error) {}
