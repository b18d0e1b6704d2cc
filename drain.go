package semaphore

import "context"

// Drain waits until every unit is back: until no units are held or consumed, so
// that Available would equal Capacity. It returns nil then, at once if nothing is
// out. If ctx ends first it returns an error that matches ctx.Err() and
// context.Cause(ctx) (and ErrTimedOut for a deadline) and says how many units are
// still out; the units stay with their holders.
//
// Drain does not stop admission: on a healthy semaphore new acquisitions may keep
// it from returning. The shutdown sequence is Break, then Drain: Break fails every
// waiter and every later acquire, so from then on units only come back, and
// Release goes on counting them (without ever panicking) although Available
// reports 0. Together they guarantee that when Drain returns nil nobody holds
// units of the semaphore and nobody ever will again. Units a holder never releases
// keep Drain waiting until ctx ends; a Units that was detached must be released
// with Release(n) to count.
//
// Drain never takes units, never fails a waiter and never blocks a Release. While
// it waits, every Release takes the semaphore's lock to see whether it was the
// last.
func (s *Semaphore) Drain(ctx context.Context) error {
	s.mu.Lock()
	// Set the flag first and count from the word it was set on: a lock-free
	// Release either came before (and is counted) or fails its swap on the flag
	// and reports to notifyDrainLocked.
	st := s.state.Or(flagDraining)
	if s.outLocked(st) == 0 {
		s.endDrainLocked()
		s.mu.Unlock()
		return nil
	}
	if s.drained == nil {
		s.drained = make(chan struct{})
	}
	drained := s.drained
	s.drainers++
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
	if s.drainers--; s.drainers == 0 {
		s.drained = nil
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
	if s.drained != nil && s.outLocked(s.state.Load()) <= 0 {
		close(s.drained)
		s.drained, s.drainers = nil, 0
		s.endDrainLocked()
	}
}

// endDrainLocked clears flagDraining when no Drain waits.
func (s *Semaphore) endDrainLocked() {
	if s.drainers == 0 {
		s.state.And(^int64(flagDraining))
	}
}

func (s *Semaphore) errDrain(ctx context.Context, out int64) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	what := "drain: " + count(out, "unit") + " still out: " + err.Error()
	matches := []error{err}
	if err == context.DeadlineExceeded {
		matches = append(matches, ErrTimedOut)
	}
	if cause != nil && cause != err {
		what += ": " + cause.Error()
		matches = append(matches, cause)
	}
	return &opError{s: s, why: what, matches: matches}
}
