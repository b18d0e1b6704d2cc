package semaphore

import (
	"time"

	"github.com/fairsem/semaphore/internal/statsline"
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

// String writes s on one line, each field under the name the metrics and
// Diagnostics give it, for example
//
//	semaphore "db" capacity=10 available=3 held=7 waiters=2 broken=false acquired=120 acquired_immediately=97 queued=23 timed_out=1 cancelled=0 rejected=0 wait_time=1.503s
//
// followed by head_wait and oldest_holder when they are not zero (they are
// known with holder tracking only). The name is quoted; an unnamed
// semaphore's line begins "unnamed semaphore".
func (s Stats) String() string {
	l := statsline.New("semaphore", s.Name)
	l.Int("capacity", s.Capacity)
	l.Int("available", s.Available)
	l.Int("held", s.Held)
	l.Int("waiters", int64(s.Waiters))
	l.Bool("broken", s.Broken)
	l.Uint("acquired", s.Acquired)
	l.Uint("acquired_immediately", s.AcquiredImmediately)
	l.Uint("queued", s.Queued)
	l.Uint("timed_out", s.TimedOut)
	l.Uint("cancelled", s.Cancelled)
	l.Uint("rejected", s.Rejected)
	l.Duration("wait_time", s.WaitTime)
	if s.HeadWait != 0 {
		l.Duration("head_wait", s.HeadWait)
	}
	if s.OldestHolder != 0 {
		l.Duration("oldest_holder", s.OldestHolder)
	}
	return l.String()
}
