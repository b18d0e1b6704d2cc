package semaphore

import (
	"context"

	"github.com/fairsem/semaphore/internal/errs"
)

// breakState is what Break leaves behind: the error Err returns, and the cause that
// every failed call wraps.
type breakState struct {
	err     error   // what Err returns: matches ErrBroken and cause
	cause   error   // the error passed to Break; may be nil
	why     string  // "broken" or "broken: " + the cause's text quoted, for every failed call's message
	matches []error // ErrBroken and the cause, shared by every failed call's error
}

// Break stops admission for good: every waiter, and every later acquire, fails with
// an error matching ErrBroken and err (when not nil). Holders keep their units and
// return them as usual (see the package documentation for what else changes).
// Only the first Break counts. Break never blocks on a waiter.
func (s *Semaphore) Break(err error) {
	if s.isZero() {
		panic(errZeroValue)
	}
	s.mu.Lock()
	x := s.extraLocked()
	if x.broken.Load() != nil {
		s.mu.Unlock()
		return
	}
	b := &breakState{cause: err, why: "broken", matches: []error{ErrBroken}}
	if err != nil {
		b.why += ": " + errs.Cause(err)
		b.matches = append(b.matches, err)
	}
	b.err = s.failure(b.why, b.matches...)
	// Store the record before clearing the flag: a path that sees the flag
	// cleared reads the record next, and the atomics order the two.
	x.broken.Store(b)
	s.state.And(^int64(flagHealthy))
	var woken wakeList
	for w := s.waiting.Front(); w != nil; w = s.waiting.Front() {
		s.settleLocked(w, Broken, &woken)
	}
	s.mu.Unlock()
	woken.wake()
	if o := s.opts.observer; o != nil {
		o.Broken(s, err) // after the unlock: it may call Stats and Diagnostics
	}
}

// Err returns nil while the semaphore is healthy, and after Break an error that
// matches ErrBroken and the error passed to Break.
func (s *Semaphore) Err() error {
	if b := s.brokenState(); b != nil {
		return b.err
	}
	return nil
}

// Drain waits until no unit is held or consumed and returns nil, or until ctx ends
// and returns an error matching ctx.Err() that says how many units are still out.
// It does not stop admission: the shutdown sequence is Break, then Drain, after
// which nobody holds units and nobody ever will again. Drain never takes units,
// never fails a waiter and never blocks a Release.
//
// While Drain waits, every Release takes the lock, to see whether it was the last.
func (s *Semaphore) Drain(ctx context.Context) error {
	if s.isZero() {
		panic(errZeroValue)
	}
	s.mu.Lock()
	x := s.extraLocked()
	// Set the flag first and count from the word it was set on: a lock-free
	// Release either came before (and is counted) or fails its swap on the flag
	// and reports to notifyDrainLocked.
	st := s.state.Or(flagDraining)
	if s.outLocked(st) == 0 {
		s.endDrainLocked()
		s.mu.Unlock()
		return nil
	}
	if x.drained == nil {
		x.drained = make(chan struct{})
	}
	drained := x.drained
	x.drainers++
	s.mu.Unlock()

	select {
	case <-drained:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-drained:
		return nil // drained in the meantime; notifyDrainLocked cleaned up
	default:
	}
	if x.drainers--; x.drainers == 0 {
		x.drained = nil
		s.endDrainLocked()
	}
	return s.errDrain(ctx, s.outLocked(s.state.Load()))
}

// outLocked returns the units held or consumed: capacity minus available, from the
// state word st. mu must be held, so that the capacity is the one st goes with.
func (s *Semaphore) outLocked(st int64) int64 {
	return s.capacity.Load() - unitsOf(st)
}

// notifyDrainLocked ends the waiting Drain calls if every unit is back.
func (s *Semaphore) notifyDrainLocked() {
	if x := s.x.Load(); x != nil && x.drained != nil && s.outLocked(s.state.Load()) <= 0 {
		close(x.drained)
		x.drained, x.drainers = nil, 0
		s.endDrainLocked()
	}
}

// endDrainLocked clears flagDraining when no Drain waits.
func (s *Semaphore) endDrainLocked() {
	if s.x.Load().drainers == 0 {
		s.state.And(^int64(flagDraining))
	}
}

func (s *Semaphore) errDrain(ctx context.Context, out int64) error {
	deadline, why, matches := errs.Context(ctx)
	if deadline {
		matches = append(matches, ErrTimedOut)
	}
	return s.failure("drain: "+errs.Count(out, "unit")+" still out: "+why, matches...)
}
