package keyed

import "github.com/fairsem/semaphore"

// An Observer is told how each call that could not be granted its key's units at
// once ended, with the key, and about Break. It sees the key level, and the
// calls refused because the set is broken, as a semaphore's observer sees its
// own: Acquire and AcquireTimeout only, never TryAcquire. Waits at the second
// level are not reported: the global semaphore's are reported by its own
// observer (semaphore.WithObserver), which its owner sets.
//
// The methods run synchronously on the goroutine that made the call (WaitEnded)
// or that called Break (Broken), with no lock of the set held; they delay their
// caller, so they must be quick and must not block. They may run concurrently.
type Observer interface {
	// WaitEnded is called once for every Acquire, AcquireInto and
	// AcquireTimeout that was not granted the key's units at once, as
	// semaphore.Observer.WaitEnded is for one semaphore: one that waited at its
	// key's level, whatever the outcome, and one refused or failed without
	// waiting there, Break's refusals included.
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

// WaitEnded reports a call at the key's semaphore as the key's. The call holds
// a reference to the entry, so the entry serves the key (see keys.go).
func (o *keyObserver) WaitEnded(_ *semaphore.Semaphore, ev semaphore.WaitEvent) {
	o.set.observer.WaitEnded(o.set, o.e.key, ev)
}

// Broken is the set's to report, once for all keys (see Set.Break).
func (*keyObserver) Broken(*semaphore.Semaphore, error) {}
