package admission

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
