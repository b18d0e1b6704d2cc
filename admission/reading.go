package admission

import (
	"fmt"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/list"
)

// Reading reads the controller in the core's plain values, for a debug page or
// a metrics exporter, in one hold of its lock: its count resource as Capacity,
// the permits it counts as held (Held, which exceeds Capacity after a
// shrinking SetLimits) and the count available (0 once broken); Waiters and
// Queued cover both queues, the admission queue and the memory queue, and
// HeadWait is the longest wait at the head of either. Its Rejected (a full
// queue), Shed and Cancelled are admission's own counters of those names.
// Memory, parked permits and the other counters of Stats are among the
// details.
func (c *Controller) Reading() semaphore.Reading {
	c.lock()
	m := c.readLocked(time.Now())
	cause := c.causeLocked()
	c.unlock()
	r := m.reading()
	r.Kind = "admission controller"
	if cause != nil {
		r.Cause = cause.Error()
	}
	return r
}

// Reading reads the group in the core's plain values, in one hold of its lock:
// the sums over its members of what each member's Reading gives (each
// member's count limit is the group's, so Capacity is that limit times the
// members), one detail per member, saying which are broken or removed, and
// one for the memory and the shared pool. A group itself never breaks: Broken
// is false.
func (g *Group) Reading() semaphore.Reading {
	g.lock()
	gs := g.statsLocked()
	now := time.Now()
	members := make([]memberReading, len(g.members))
	for i, m := range g.members {
		members[i] = m.readLocked(now)
	}
	g.unlock()
	r := semaphore.Reading{Kind: "admission group", Name: gs.Name}
	for i, m := range gs.Members {
		mr := members[i].reading()
		r.Capacity += mr.Capacity
		r.Held += mr.Held
		r.Available += mr.Available
		r.Waiters += mr.Waiters
		r.HeadWait = max(r.HeadWait, mr.HeadWait)
		r.Acquired += mr.Acquired
		r.Queued += mr.Queued
		r.TimedOut += mr.TimedOut
		r.Cancelled += mr.Cancelled
		r.Rejected += mr.Rejected
		r.Shed += mr.Shed
		member := fmt.Sprintf("%d shares, count %d/%d, %d queued", m.Shares, m.Held.Count, m.Limits.Count, mr.Waiters)
		if m.Removed {
			member += ", removed"
		} else if mr.Broken {
			member += ", broken"
		}
		r.Details = append(r.Details, semaphore.Detail{Name: "member " + strconv.Quote(m.Name), Value: member})
	}
	r.Details = append(r.Details,
		semaphore.Detail{Name: "memory", Value: fmt.Sprintf("%d bytes, pool %d, lent %d", gs.Total.Memory, gs.Pool, gs.Borrowed)},
		semaphore.Detail{Name: "bottleneck", Value: quoteOrNone(gs.Bottleneck)})
	return r
}

// memberReading is what a controller's Reading reads under its lock.
type memberReading struct {
	st       Stats
	avail    int64         // the count available; negative after a shrinking SetLimits
	headWait time.Duration // see headWaitLocked
}

func (c *Controller) readLocked(now time.Time) memberReading {
	return memberReading{st: c.statsLocked(), avail: c.avail.Count, headWait: c.headWaitLocked(now)}
}

// reading is a controller's Reading, without its kind and cause.
func (m memberReading) reading() semaphore.Reading {
	st := m.st
	r := semaphore.Reading{
		Name:      st.Name,
		Broken:    st.Broken,
		Capacity:  st.Limits.Count,
		Held:      st.Held.Count,
		Waiters:   st.Waiters + st.MemoryWaiters,
		HeadWait:  m.headWait,
		Acquired:  st.Acquired,
		Queued:    st.QueuedForAdmission + st.QueuedForMemory,
		TimedOut:  st.TimedOut,
		Cancelled: st.Cancelled,
		Rejected:  st.Rejected,
		Shed:      st.Shed,
		Details: []semaphore.Detail{
			{Name: "memory in use", Value: fmt.Sprintf("%d of %d bytes", st.Held.Memory, st.Limits.Memory)},
			{Name: "memory borrowed", Value: strconv.FormatInt(st.Borrowed, 10)},
			{Name: "queued for memory now", Value: strconv.Itoa(st.MemoryWaiters)},
			{Name: "parked permits", Value: strconv.Itoa(st.Inactive)},
			{Name: "permits needing CPU", Value: strconv.Itoa(st.NeedCPUPermits)},
			{Name: "killed", Value: strconv.FormatUint(st.Killed, 10)},
			{Name: "evictions", Value: strconv.FormatUint(st.PermitEvictions+st.TimeEvictions, 10)},
		},
	}
	if !st.Broken {
		r.Available = max(m.avail, 0)
	}
	return r
}

// headWaitLocked is how long the head of the admission queue or of the memory
// queue, whichever came first, has waited; 0 when both are empty.
func (c *Controller) headWaitLocked(now time.Time) time.Duration {
	var d time.Duration
	for _, q := range [...]*list.List[waiter]{&c.queue, &c.memQueue} {
		if w := q.Front(); w != nil {
			d = max(d, now.Sub(w.arrived))
		}
	}
	return d
}

// causeLocked is the error Break was given, or nil.
func (c *Controller) causeLocked() error {
	if c.broken == nil || len(c.broken.matches) < 2 {
		return nil
	}
	return c.broken.matches[1]
}

// quoteOrNone quotes a name, or says "none" for the empty one.
func quoteOrNone(name string) string {
	if name == "" {
		return "none"
	}
	return strconv.Quote(name)
}
