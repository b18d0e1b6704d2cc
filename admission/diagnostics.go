package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Diagnostics renders a dump of the controller, for a human deciding why requests
// wait: a header with the count and memory in use against the limits, the
// identified bottleneck(s), a table of permits grouped by operation and state with
// the count and memory they hold (largest memory first; groups past maxLines are
// summed in an "omitted" row), a total row, and the counters. maxLines <= 0 means
// no limit.
func (c *Controller) Diagnostics(maxLines int) string {
	c.lock()
	defer c.unlock()
	return c.dumpTextLocked("", nil, maxLines)
}

// defaultDumpLines bounds the table of automatic dumps.
const defaultDumpLines = 20

// dumpLocked logs a dump for problem, naming the permit that triggered it, at most
// once per dump interval.
func (c *Controller) dumpLocked(problem string, trigger *Permit) {
	if c.logger == nil {
		return
	}
	now := time.Now()
	if !c.lastDump.IsZero() && now.Sub(c.lastDump) < c.dumpEvery {
		return
	}
	c.lastDump = now
	text := c.dumpTextLocked(problem, trigger, defaultDumpLines)
	c.mu.after = append(c.mu.after, func() {
		c.logger.Warn("admission: "+problem, "controller", c.name, "diagnostics", text)
	})
}

type group struct {
	op      string
	state   State
	permits int
	held    Resources
}

func (c *Controller) dumpTextLocked(problem string, trigger *Permit, maxLines int) string {
	var b strings.Builder
	used := c.usedLocked()
	fmt.Fprintf(&b, "Controller %q with %d/%d count and %s/%s memory resources", c.name,
		used.Count, c.limits.Count, formatBytes(used.Memory), formatBytes(c.limits.Memory))
	if c.group != nil {
		fmt.Fprintf(&b, " (%s borrowed from group %q's pool)", formatBytes(c.borrowedLocked()), c.group.name)
	}
	if problem != "" {
		b.WriteString(": " + problem)
	}
	b.WriteString(", dumping permit diagnostics:\n")
	if trigger != nil {
		held := trigger.heldLocked()
		fmt.Fprintf(&b, "Trigger permit: count=%d, memory=%s, op=%q, state=%s\n",
			held.Count, formatBytes(held.Memory), trigger.op, trigger.stateLocked())
	}
	if bn := c.bottlenecksLocked(); len(bn) > 0 {
		fmt.Fprintf(&b, "Identified bottleneck(s): %s\n", strings.Join(bn, ", "))
	}

	groups := map[[2]string]*group{}
	for p := range c.permits {
		st := p.stateLocked()
		k := [2]string{p.op, st.String()}
		g := groups[k]
		if g == nil {
			g = &group{op: p.op, state: st}
			groups[k] = g
		}
		g.permits++
		g.held = g.held.Add(p.heldLocked())
	}
	sorted := make([]*group, 0, len(groups))
	for _, g := range groups {
		sorted = append(sorted, g)
	}
	slices.SortFunc(sorted, func(a, b *group) int {
		return cmp.Or(cmp.Compare(b.held.Memory, a.held.Memory), cmp.Compare(b.held.Count, a.held.Count),
			cmp.Compare(a.op, b.op), cmp.Compare(a.state, b.state))
	})
	fmt.Fprintf(&b, "%-8s%-8s%-8s%s\n", "permits", "count", "memory", "op/state")
	var total, omitted group
	for i, g := range sorted {
		total.permits += g.permits
		total.held = total.held.Add(g.held)
		if maxLines > 0 && i >= maxLines {
			omitted.permits += g.permits
			omitted.held = omitted.held.Add(g.held)
			continue
		}
		fmt.Fprintf(&b, "%-8d%-8d%-8s%q/%s\n", g.permits, g.held.Count, formatBytes(g.held.Memory), g.op, g.state)
	}
	if omitted.permits > 0 {
		fmt.Fprintf(&b, "%-8d%-8d%-8s%s\n", omitted.permits, omitted.held.Count, formatBytes(omitted.held.Memory), "permits omitted for brevity")
	}
	fmt.Fprintf(&b, "%-8d%-8d%-8s%s\n", total.permits, total.held.Count, formatBytes(total.held.Memory), "total")

	st := c.statsLocked()
	b.WriteString("Stats:\n")
	for _, kv := range []struct {
		name string
		v    any
	}{
		{"permit_based_evictions", st.PermitEvictions},
		{"time_based_evictions", st.TimeEvictions},
		{"inactive", st.Inactive},
		{"rejected", st.Rejected},
		{"shed", st.Shed},
		{"killed_due_to_kill_limit", st.Killed},
		{"timed_out", st.TimedOut},
		{"cancelled", st.Cancelled},
		{"acquired", st.Acquired},
		{"acquired_immediately", st.AcquiredImmediately},
		{"queued_for_admission", st.QueuedForAdmission},
		{"queued_for_memory", st.QueuedForMemory},
		{"queued_because_count", st.QueuedBecauseCount},
		{"queued_because_memory", st.QueuedBecauseMemory},
		{"queued_because_cpu", st.QueuedBecauseCPU},
		{"total_permits", st.TotalPermits},
		{"current_permits", st.CurrentPermits},
		{"need_cpu_permits", st.NeedCPUPermits},
		{"awaiting_permits", st.AwaitingPermits},
		{"queued_now", st.Waiters},
	} {
		fmt.Fprintf(&b, "%s: %v\n", kv.name, kv.v)
	}
	return b.String()
}

// bottlenecksLocked names what holds requests back: CPU when permits need it and
// are not awaiting something else, memory when none is available, concurrency when
// no count is.
func (c *Controller) bottlenecksLocked() []string {
	var bn []string
	if c.needCPU-c.awaiting > 0 {
		bn = append(bn, "CPU")
	}
	if c.avail.Memory <= 0 {
		bn = append(bn, "memory")
	}
	if c.avail.Count <= 0 {
		bn = append(bn, "concurrency")
	}
	return bn
}

// usageLocked summarises use and bottleneck for error messages.
func (c *Controller) usageLocked() string {
	used := c.usedLocked()
	s := fmt.Sprintf("count %d/%d, memory %s/%s in use", used.Count, c.limits.Count,
		formatBytes(used.Memory), formatBytes(c.limits.Memory))
	if bn := c.bottlenecksLocked(); len(bn) > 0 {
		s += "; bottleneck: " + strings.Join(bn, ", ")
	}
	return s
}
