package semaphore

import (
	"time"
)

// Stats is a snapshot of a semaphore's state and counters. The counters only grow.
// Every call that fails is counted once, by the Outcome its error carries:
// Rejected for TooLarge (at the call, or when a shrinking Resize fails a waiter)
// and QueueFull, TimedOut for a deadline (AcquireTimeout's or the context's),
// Cancelled for a context cancelled without a deadline, whatever its cause. A
// call failed by Break is in none of the failure counters: Broken says why.
type Stats struct {
	Name      string // from WithName
	Capacity  int64  // as Capacity
	Available int64  // as Available: never negative, 0 once broken
	Held      int64  // units held or consumed: what Drain waits for; may exceed Capacity after a shrink or Consume, and is still counted after Break
	Waiters   int    // as Waiters: calls waiting now
	Broken    bool   // Break was called

	Acquired            uint64        // calls that returned nil (or true), waited for or not; a grant given back to a cancelled call is not one
	AcquiredImmediately uint64        // of those, granted without waiting
	Queued              uint64        // calls that joined the wait list
	TimedOut            uint64        // calls that failed on a deadline: AcquireTimeout's, or the context's
	Cancelled           uint64        // calls whose context was cancelled (a deadline counts as TimedOut)
	Rejected            uint64        // calls failed with ErrTooLarge or ErrQueueFull
	WaitTime            time.Duration // total time spent in the wait list by all waiters, granted or not

	// Known with holder tracking only (WithHolderTracking, or an option that
	// implies it); 0 without it.
	HeadWait     time.Duration // how long the head waiter has waited; 0 when nobody waits
	OldestHolder time.Duration // the age of the oldest Units holding units; 0 when none does
}

// Stats returns a snapshot of the semaphore's state and counters. Capacity,
// Available, the grant counts and the ages are read together; the other fields are
// read one at a time, so under concurrent use they may be from slightly different
// instants. With holder tracking it costs O(holders), as Diagnostics does.
func (s *Semaphore) Stats() Stats {
	s.mu.Lock()
	// The capacity and the units together, under mu, where Resize changes both.
	st, capacity := s.state.Load(), s.capacity.Load()
	immediate := s.immediate + uint64(st&countMask)>>countShift
	x := s.x.Load()
	var queued, granted uint64
	if x != nil {
		queued, granted = x.queued, x.granted
	}
	var headWait, oldestHolder time.Duration
	if s.diag != nil {
		headWait, oldestHolder = s.diag.agesLocked()
	}
	s.mu.Unlock()
	stats := Stats{
		Name:                s.Name(),
		Capacity:            capacity,
		Available:           availableIn(st),
		Held:                capacity - unitsOf(st),
		Acquired:            immediate + granted,
		AcquiredImmediately: immediate,
		Queued:              queued,
		HeadWait:            headWait,
		OldestHolder:        oldestHolder,
	}
	if x != nil {
		stats.Waiters = int(x.waiters.Load())
		stats.Broken = x.broken.Load() != nil
		stats.TimedOut = x.timedOut.Load()
		stats.Cancelled = x.cancelled.Load()
		stats.Rejected = x.rejected.Load()
		stats.WaitTime = time.Duration(x.waitNanos.Load())
	}
	return stats
}
