package semaphore

import "time"

// Stats is a snapshot of a semaphore's state and counters. The counters only grow.
// Every call that fails is counted once, under the error it returned: Rejected for
// ErrTooLarge (at the call, or when a shrinking Resize fails a waiter) and
// ErrQueueFull, TimedOut for an error matching ErrTimedOut, Cancelled for a context
// cancelled without a deadline. A call failed by Break is in none of the failure
// counters: Broken says why.
type Stats struct {
	Name      string // from WithName
	Capacity  int64  // as Capacity
	Available int64  // as Available: never negative, 0 once broken
	Waiters   int    // as Waiters: calls waiting now
	Broken    bool   // Break was called

	Acquired            uint64        // successful acquisitions, waited for or not (TryAcquire included)
	AcquiredImmediately uint64        // of those, granted without waiting
	Queued              uint64        // calls that joined the wait list
	TimedOut            uint64        // calls that failed on a deadline: AcquireTimeout's, or the context's
	Cancelled           uint64        // waits whose context was cancelled (a deadline counts as TimedOut)
	Rejected            uint64        // calls failed with ErrTooLarge or ErrQueueFull
	WaitTime            time.Duration // total time spent in the wait list by all waiters, granted or not
}

// Stats returns a snapshot of the semaphore's state and counters. Capacity,
// Available and the grant counts are read together; the other fields are read one
// at a time, so under concurrent use they may be from slightly different instants.
func (s *Semaphore) Stats() Stats {
	s.mu.Lock()
	// The capacity and the units together, under mu, where Resize changes both.
	st, capacity := s.state.Load(), s.capacity.Load()
	immediate := s.immediate + uint64(st&countMask)>>countShift
	queued, granted := s.queued, s.granted
	s.mu.Unlock()
	return Stats{
		Name:                s.name,
		Capacity:            capacity,
		Available:           availableIn(st),
		Waiters:             s.Waiters(),
		Broken:              s.broken.Load() != nil,
		Acquired:            immediate + granted,
		AcquiredImmediately: immediate,
		Queued:              queued,
		TimedOut:            s.timedOut.Load(),
		Cancelled:           s.cancelled.Load(),
		Rejected:            s.rejected.Load(),
		WaitTime:            time.Duration(s.waitNanos.Load()),
	}
}
