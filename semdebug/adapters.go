package semdebug

import (
	"fmt"
	"strconv"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/keyed"
)

// sourceOf adapts x to a Source: a Source as it is, and the limiters of this
// module through the adapters below.
func sourceOf(x any) (Source, bool) {
	switch v := x.(type) {
	case Source:
		return v, true
	case *semaphore.Semaphore:
		return semaphoreSource{v}, true
	case *admission.Controller:
		return controllerSource{v}, true
	case *admission.Group:
		return groupSource{v}, true
	case *keyed.Set:
		return keyedSource{v}, true
	}
	return nil, false
}

// semaphoreSource shows a core semaphore. With holder tracking its Stats tell the
// head waiter's wait and the oldest holder's age; without it HeadWait is the
// page's own bound (see Snapshot.Joined). The holders are in the Diagnostics dump.
type semaphoreSource struct{ s *semaphore.Semaphore }

func (a semaphoreSource) Name() string                    { return a.s.Name() }
func (a semaphoreSource) Kind() string                    { return "semaphore" }
func (a semaphoreSource) Diagnostics(maxLines int) string { return a.s.Diagnostics(maxLines) }

func (a semaphoreSource) Snapshot() Snapshot {
	st := a.s.Stats()
	snap := Snapshot{
		Capacity:  st.Capacity,
		InUse:     max(st.Capacity-st.Available, 0),
		Available: st.Available,
		Waiters:   st.Waiters,
		Joined:    st.Queued,
		HeadWait:  st.HeadWait,
		Broken:    st.Broken,
		Acquired:  st.Acquired,
		TimedOut:  st.TimedOut,
		Shed:      st.Rejected,

		OldestHolder: st.OldestHolder,
		Details: []Detail{
			{"acquired at once", strconv.FormatUint(st.AcquiredImmediately, 10)},
			{"queued", strconv.FormatUint(st.Queued, 10)},
			{"cancelled", strconv.FormatUint(st.Cancelled, 10)},
			{"total wait time", st.WaitTime.String()},
		},
	}
	if st.Broken {
		if err := a.s.Err(); err != nil {
			snap.Cause = err.Error()
		}
	}
	return snap
}

// controllerSource shows an admission controller by its count resource; memory
// is among the details.
type controllerSource struct{ c *admission.Controller }

func (a controllerSource) Name() string                    { return a.c.Stats().Name }
func (a controllerSource) Kind() string                    { return "admission controller" }
func (a controllerSource) Diagnostics(maxLines int) string { return a.c.Diagnostics(maxLines) }

func (a controllerSource) Snapshot() Snapshot {
	snap := controllerSnapshot(a.c.Stats())
	if err := a.c.Err(); err != nil {
		snap.Cause = err.Error()
	}
	return snap
}

func controllerSnapshot(st admission.Stats) Snapshot {
	return Snapshot{
		Broken:    st.Broken,
		Capacity:  st.Limits.Count,
		InUse:     st.Used.Count,
		Available: max(st.Limits.Count-st.Used.Count, 0),
		Waiters:   st.Waiters + st.MemoryWaiters,
		Joined:    st.QueuedForAdmission + st.QueuedForMemory,
		Acquired:  st.Admitted,
		TimedOut:  st.TimedOut,
		Shed:      st.Shed,
		Details: []Detail{
			{"memory in use", fmt.Sprintf("%d of %d bytes", st.Used.Memory, st.Limits.Memory)},
			{"memory borrowed", strconv.FormatInt(st.Borrowed, 10)},
			{"queued for memory now", strconv.Itoa(st.MemoryWaiters)},
			{"parked permits", strconv.Itoa(st.Inactive)},
			{"permits needing CPU", strconv.Itoa(st.NeedCPUPermits)},
			{"killed", strconv.FormatUint(st.Killed, 10)},
			{"evictions", strconv.FormatUint(st.PermitEvictions+st.TimeEvictions, 10)},
		},
	}
}

// groupSource shows an admission group as the sum of its members.
type groupSource struct{ g *admission.Group }

func (a groupSource) Name() string                    { return a.g.Stats().Name }
func (a groupSource) Kind() string                    { return "admission group" }
func (a groupSource) Diagnostics(maxLines int) string { return a.g.Diagnostics(maxLines) }

func (a groupSource) Snapshot() Snapshot {
	gs := a.g.Stats()
	var snap Snapshot
	for _, m := range gs.Members {
		ms := controllerSnapshot(m.Stats)
		snap.Capacity += ms.Capacity
		snap.InUse += ms.InUse
		snap.Available += ms.Available
		snap.Waiters += ms.Waiters
		snap.Joined += ms.Joined
		snap.Acquired += ms.Acquired
		snap.TimedOut += ms.TimedOut
		snap.Shed += ms.Shed
		member := fmt.Sprintf("%d shares, count %d/%d, %d queued", m.Shares, m.Used.Count, m.Limits.Count, m.Waiters)
		if ms.Broken {
			member += ", broken"
		}
		snap.Details = append(snap.Details, Detail{"member " + strconv.Quote(m.Name), member})
	}
	snap.Details = append(snap.Details,
		Detail{"memory", fmt.Sprintf("%d bytes, pool %d, lent %d", gs.Total.Memory, gs.Pool, gs.Borrowed)},
		Detail{"bottleneck", gs.Bottleneck})
	return snap
}

// keyedSource shows a keyed set by its units held over every key; its global
// semaphore, shared with others, can be registered on its own.
type keyedSource struct{ s *keyed.Set }

func (a keyedSource) Name() string                    { return a.s.Name() }
func (a keyedSource) Kind() string                    { return "keyed set" }
func (a keyedSource) Diagnostics(maxLines int) string { return a.s.Diagnostics(maxLines) }

func (a keyedSource) Snapshot() Snapshot {
	st := a.s.Stats()
	snap := Snapshot{
		InUse:    st.Held,
		Waiters:  st.Waiters,
		Broken:   st.Broken,
		Acquired: st.Acquired,
		TimedOut: st.TimedOut,
		Shed:     st.Rejected,
		Details: []Detail{
			{"active keys", strconv.Itoa(st.Keys)},
			{"cancelled", strconv.FormatUint(st.Cancelled, 10)},
		},
	}
	if g := a.s.Global(); g != nil {
		snap.Capacity = g.Capacity()
		snap.Available = g.Available()
		snap.Details = append(snap.Details, Detail{"global semaphore", g.String()})
	}
	if err := a.s.Err(); err != nil {
		snap.Cause = err.Error()
	}
	return snap
}
