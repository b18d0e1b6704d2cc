package admission

// SetCountLimit changes the count limit only, leaving the memory limit as it
// is, as SetLimits would with the current memory limit but in one hold of the
// lock, so that it never undoes a concurrent change of the memory limit. It is
// meant for a limit driven from outside (an adaptive limiter). Permits keep
// what they hold; raising the limit admits the waiters that now fit. It panics
// on a negative n, and for a member of a Group.
func (c *Controller) SetCountLimit(n int64) {
	if n < 0 {
		c.panicf("SetCountLimit(%d): negative limit", n)
	}
	if c.group != nil {
		c.panicf("SetCountLimit(%d): a member of group %q takes its limits from the group", n, c.group.name)
	}
	c.mu.Lock()
	defer c.unlock()
	limits := c.limits
	limits.Count = n
	c.setLimitsLocked(limits)
	c.maybeAdmitLocked()
}
