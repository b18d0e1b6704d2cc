package admission

import "github.com/fairsem/semaphore/internal/statsline"

// Stats is a snapshot of a controller's state and counters. The counters mirror
// the reader concurrency semaphore's and only grow; the gauges describe this
// moment.
type Stats struct {
	Name   string
	Broken bool // Break was called (Group.Remove breaks the member)
	Limits Resources
	Held   Resources // held by permits now; may exceed Limits
	// Borrowed is the memory a group member holds beyond its share (Limits.Memory),
	// borrowed from the group's shared pool; 0 outside a group.
	Borrowed int64

	Acquired            uint64 // permits admitted (Acquire and Readmit), at once or after queuing: the calls that returned nil
	AcquiredImmediately uint64 // of those, admitted without queuing
	QueuedForAdmission  uint64 // requests that joined the admission queue
	QueuedForMemory     uint64 // RequestMemory calls that waited past the serialize limit
	QueuedBecauseCount  uint64 // queued while count was exhausted
	QueuedBecauseMemory uint64 // queued while memory was exhausted or past a limit
	QueuedBecauseCPU    uint64 // queued while too many permits needed CPU
	Rejected            uint64 // refused at once, the admission queue being full (semaphore.QueueFull)
	Shed                uint64 // queued, then refused at the head by preemptive shedding (semaphore.Shed)
	TimedOut            uint64 // requests whose context's deadline passed, before or while waiting
	Cancelled           uint64 // requests whose context was cancelled (a deadline counts as TimedOut), whatever its cause
	Killed              uint64 // permits that hit the kill limit (once each)
	PermitEvictions     uint64 // parked permits evicted for admission, explicitly or on Break
	TimeEvictions       uint64 // parked permits evicted by their TTL
	TotalPermits        uint64 // permits ever created (Acquire and Track)

	Waiters         int // requests in the admission queue now
	MemoryWaiters   int // requests in the memory queue now
	Inactive        int // parked permits now
	CurrentPermits  int // permits not yet released, admitted or waiting
	NeedCPUPermits  int // active permits holding NeedCPU now (parked and evicted ones do not count)
	AwaitingPermits int // of those, permits holding Await too
}

// Stats returns a snapshot of the controller's counters and state.
func (c *Controller) Stats() Stats {
	c.lock()
	defer c.unlock()
	return c.statsLocked()
}

func (c *Controller) statsLocked() Stats {
	st := c.stats
	st.Broken = c.broken != nil
	st.Limits = c.limits
	st.Held = c.usedLocked()
	if c.group != nil {
		st.Borrowed = c.borrowedLocked()
	}
	st.Waiters = c.queue.Len()
	st.MemoryWaiters = c.memQueue.Len()
	st.Inactive = c.inactive.Len()
	st.CurrentPermits = len(c.permits)
	st.NeedCPUPermits = c.needCPU
	st.AwaitingPermits = c.awaiting
	return st
}

// String writes s on one line, each field under the name the metrics and
// Diagnostics give it, memory as Resources.String writes it, for example
//
//	admission "reads" count_limit=10 memory_limit=64M count_held=3 memory_held=6060K borrowed=0B broken=false acquired=120 acquired_immediately=97 queued_for_admission=23 queued_for_memory=0 queued_because_count=20 queued_because_memory=3 queued_because_cpu=0 rejected=0 shed=2 timed_out=1 cancelled=0 killed=0 permit_evictions=0 time_evictions=0 total_permits=121 waiters=2 memory_waiters=0 inactive=0 current_permits=5 need_cpu_permits=3 awaiting_permits=0
//
// The name is quoted; an unnamed controller's line begins "unnamed admission".
func (s Stats) String() string {
	l := statsline.New("admission", s.Name)
	s.writeFields(l)
	return l.String()
}

// writeFields adds s's fields but Name to l, one call per field in the order
// they are declared.
func (s Stats) writeFields(l *statsline.Line) {
	l.Int("count_limit", s.Limits.Count)
	l.Word("memory_limit", formatBytes(s.Limits.Memory))
	l.Int("count_held", s.Held.Count)
	l.Word("memory_held", formatBytes(s.Held.Memory))
	l.Word("borrowed", formatBytes(s.Borrowed))
	l.Bool("broken", s.Broken)
	l.Uint("acquired", s.Acquired)
	l.Uint("acquired_immediately", s.AcquiredImmediately)
	l.Uint("queued_for_admission", s.QueuedForAdmission)
	l.Uint("queued_for_memory", s.QueuedForMemory)
	l.Uint("queued_because_count", s.QueuedBecauseCount)
	l.Uint("queued_because_memory", s.QueuedBecauseMemory)
	l.Uint("queued_because_cpu", s.QueuedBecauseCPU)
	l.Uint("rejected", s.Rejected)
	l.Uint("shed", s.Shed)
	l.Uint("timed_out", s.TimedOut)
	l.Uint("cancelled", s.Cancelled)
	l.Uint("killed", s.Killed)
	l.Uint("permit_evictions", s.PermitEvictions)
	l.Uint("time_evictions", s.TimeEvictions)
	l.Uint("total_permits", s.TotalPermits)
	l.Int("waiters", int64(s.Waiters))
	l.Int("memory_waiters", int64(s.MemoryWaiters))
	l.Int("inactive", int64(s.Inactive))
	l.Int("current_permits", int64(s.CurrentPermits))
	l.Int("need_cpu_permits", int64(s.NeedCPUPermits))
	l.Int("awaiting_permits", int64(s.AwaitingPermits))
}
