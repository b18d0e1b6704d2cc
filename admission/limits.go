package admission

import "math"

// usedLocked is what permits hold now, as counted where they take and give
// back, never the limits less the availability: the two differ while a
// decision tries what evictions would free (evictBorrowersLocked).
func (c *Controller) usedLocked() Resources { return c.held }

// limitOf returns mult x the memory limit, and whether that limit is on. In a
// group the memory limit counts what the controller may borrow: its share plus
// the shared pool.
func (c *Controller) limitOf(mult float64) (int64, bool) {
	memory := c.limits.Memory
	if c.group != nil {
		memory += c.group.pool
	}
	f := mult * float64(memory)
	if f >= math.MaxInt64 {
		return math.MaxInt64, mult > 0 // converting f would overflow int64
	}
	return int64(f), mult > 0
}

func (c *Controller) pastLimit(mult float64, used int64) bool {
	limit, on := c.limitOf(mult)
	return on && used > limit
}

// SetLimits changes the limits. Availability shifts by the difference and may go
// negative; permits keep what they hold. Raising a limit admits the waiters that
// now fit. It panics on a negative limit, and for a member of a Group, whose
// limits follow the group's (Group.SetShares, Group.SetTotal).
func (c *Controller) SetLimits(limits Resources) {
	c.made()
	if limits.Count < 0 || limits.Memory < 0 {
		c.panicf("SetLimits(%v): negative limits", limits)
	}
	if c.group != nil {
		c.panicf("SetLimits(%v): a member of group %q takes its limits from the group", limits, c.group.name)
	}
	c.lock()
	defer c.unlock()
	c.setLimitsLocked(limits)
	c.maybeAdmitLocked()
}

// SetCountLimit changes the count limit only, in one hold of the lock, so that it
// never undoes a concurrent change of the memory limit: for a limit driven from
// outside, such as an adaptive limiter. Otherwise it is SetLimits.
func (c *Controller) SetCountLimit(n int64) {
	c.made()
	if n < 0 {
		c.panicf("SetCountLimit(%d): negative limit", n)
	}
	if c.group != nil {
		c.panicf("SetCountLimit(%d): a member of group %q takes its limits from the group", n, c.group.name)
	}
	c.lock()
	defer c.unlock()
	limits := c.limits
	limits.Count = n
	c.setLimitsLocked(limits)
	c.maybeAdmitLocked()
}

func (c *Controller) setLimitsLocked(limits Resources) {
	c.avail = c.avail.Add(limits.Sub(c.limits))
	c.limits = limits
}

// SetCPUConcurrency changes how many active permits may need CPU before admission
// stops. It panics if n < 1.
func (c *Controller) SetCPUConcurrency(n int) {
	c.made()
	if n < 1 {
		c.panicf("SetCPUConcurrency(%d): must be at least 1", n)
	}
	c.lock()
	defer c.unlock()
	c.cpuConcurrency = n
	c.maybeAdmitLocked()
}

// SetMaxWaiters changes the queue bound (WithMaxWaiters) for requests arriving
// from now on; n <= 0 removes it. Requests already queued stay.
func (c *Controller) SetMaxWaiters(n int) {
	c.lock()
	defer c.unlock()
	c.maxQueue = n
}
