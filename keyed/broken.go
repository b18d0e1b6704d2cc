package keyed

import (
	"context"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// Break puts the set in the broken state, for shutdown: the global semaphore
// (if any) and every active key's semaphore are broken with err, so that every
// waiter fails with an error matching semaphore.ErrBroken and err, and from then
// on Acquire and AcquireTimeout fail at once the same way (a done context is
// still reported first) and TryAcquire fails. Holders keep their units until they
// release them; Drain waits for that. Only the first Break counts. Break never
// blocks on a waiter.
//
// Breaking the global semaphore breaks it for every other user of it too.
func (s *Set) Break(err error) {
	if s.label == "" {
		panic(errZeroSet)
	}
	b := semaphore.New(semaphore.MaxUnits, semaphore.WithName(s.name))
	b.Break(err)
	if !s.broken.CompareAndSwap(nil, b) {
		return
	}
	// Every key active now is broken under its shard's mutex, after broken was
	// stored: a call that joined a key before fails on the key's semaphore, and
	// a key made active after finds broken (joinSlow). None can wait on a
	// healthy key of a broken set. The key semaphores' observers do nothing on
	// Broken, so this runs no caller code under a lock.
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.table.Load().each(func(e *entry) { e.sem.Break(err) })
		clear(sh.free[:])
		sh.nfree = 0
		sh.mu.Unlock()
	}
	if s.limit != nil {
		s.limit.breakLimit(err)
	}
	// The global semaphore's observer is its owner's code: not under a lock.
	if s.global != nil {
		s.global.Break(err)
	}
	if s.observer != nil {
		s.observer.Broken(s, err)
	}
}

// Err returns nil while the set is healthy, and after Break an error that
// matches semaphore.ErrBroken and the error passed to Break.
func (s *Set) Err() error {
	if s.label == "" {
		panic(errZeroSet)
	}
	b := s.broken.Load()
	if b == nil {
		return nil
	}
	// The broken semaphore's error gives the reason and what to match; the
	// set's names the set instead.
	err := b.Err()
	return s.failure(whyOf(err), err)
}

// Drain waits until no key is active: until every Units of the set has been
// released and no call is in progress. It returns nil then, at once if nothing
// is active. If ctx ends first it returns an error that matches ctx.Err() and
// context.Cause(ctx) (and semaphore.ErrTimedOut for a deadline) and says how many
// keys and units are still out.
//
// Drain does not stop admission: a key that becomes active while it waits keeps
// it waiting, as new grants keep a semaphore's Drain waiting; call Break first
// for a shutdown. It waits for this set's units only, not for other users of
// the global semaphore, whose own Drain does that.
func (s *Set) Drain(ctx context.Context) error {
	if s.label == "" {
		panic(errZeroSet)
	}
	s.mu.Lock()
	s.draining.Add(1) // before reading the shards: see drainedLocked
	if s.activeKeys() == 0 {
		s.draining.Add(-1)
		s.mu.Unlock()
		return nil
	}
	if s.drained == nil {
		s.drained = make(chan struct{})
	}
	done := s.drained
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	select {
	case <-done:
		s.mu.Unlock()
		return nil // drained meanwhile; drainedLocked cleaned up
	default:
	}
	if s.draining.Add(-1) == 0 {
		s.drained = nil
	}
	s.mu.Unlock()
	st := s.Stats()
	deadline, why, matches := errs.Context(ctx)
	if deadline {
		matches = append(matches, semaphore.ErrTimedOut)
	}
	return s.failure("drain: "+errs.Count(int64(st.Keys), "key")+" still active, holding "+errs.Count(st.Held, "unit")+": "+why, matches...)
}

// drainedLocked ends the waiting Drain calls if no key is active. mu must be
// held. A removal that leaves its shard with no key active calls it when it
// sees a Drain waiting: it subtracts from its shard's count, then reads
// draining; Drain adds to draining, then reads every shard's count.
// Sequentially consistent atomics let at most one of the two miss the other's
// write: either Drain sees the shard empty, or the removal sees Drain waiting
// and comes here, after Drain made drained (both hold mu). So the removal that
// empties the last shard still active, after Drain began, comes here and finds
// every shard empty.
func (s *Set) drainedLocked() {
	if s.drained != nil && s.activeKeys() == 0 {
		close(s.drained)
		s.drained = nil
		s.draining.Store(0)
	}
}
