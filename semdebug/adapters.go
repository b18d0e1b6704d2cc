package semdebug

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/keyed"
)

// sourceOf adapts l to a Source: a Source as it is, the limiters of this module
// through the adapters below (the one list of the types the page knows, which
// the package doc describes), and any other Limiter by its name and dump alone.
// To show a new limiter type, add its adapter here.
func sourceOf(l Limiter) Source {
	switch v := l.(type) {
	case Source:
		return v
	case *semaphore.Semaphore:
		return semaphoreSource{v}
	case *keyed.Set:
		return keyedSource{v}
	case *admission.Controller:
		return controllerSource{v}
	case *admission.Group:
		return groupSource{v}
	case *adaptive.Limiter:
		return limiterSource{v}
	}
	return dumpSource{l}
}

// dumpSource shows a Limiter the page does not know: its name, if it has a Name
// method, its type as its kind, and its dump; every number is unknown.
type dumpSource struct{ l Limiter }

func (a dumpSource) Name() string {
	if n, ok := a.l.(interface{ Name() string }); ok {
		return n.Name()
	}
	return ""
}

func (a dumpSource) Kind() string                    { return strings.TrimPrefix(fmt.Sprintf("%T", a.l), "*") }
func (a dumpSource) Diagnostics(maxLines int) string { return a.l.Diagnostics(maxLines) }
func (a dumpSource) Snapshot() Snapshot              { return Snapshot{Unknown: AllFields} }

// semaphoreSource shows a core semaphore. With holder tracking its Stats tell the
// head waiter's wait and the oldest holder's age; without it HeadWait is the
// page's own bound (see Snapshot.Queued). Its holders and waiters are listed in
// its dump. The core never sheds, so Shed stays 0.
type semaphoreSource struct{ s *semaphore.Semaphore }

func (a semaphoreSource) Name() string                    { return a.s.Name() }
func (a semaphoreSource) Kind() string                    { return "semaphore" }
func (a semaphoreSource) Diagnostics(maxLines int) string { return a.s.Diagnostics(maxLines) }

func (a semaphoreSource) Snapshot() Snapshot {
	st := a.s.Stats()
	snap := Snapshot{
		Capacity:     st.Capacity,
		InUse:        max(st.Capacity-st.Available, 0),
		Available:    st.Available,
		Waiters:      st.Waiters,
		HeadWait:     st.HeadWait,
		OldestHolder: st.OldestHolder,
		Broken:       st.Broken,
		Acquired:     st.Acquired,
		Queued:       st.Queued,
		TimedOut:     st.TimedOut,
		Cancelled:    st.Cancelled,
		Rejected:     st.Rejected,
		Details: []Detail{
			{"acquired immediately", strconv.FormatUint(st.AcquiredImmediately, 10)},
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

// keyedSource shows a keyed set by its units held over every key, against its
// limit (WithLimit) or its global semaphore's capacity when it has one (shared
// with others, the global semaphore can be registered on its own), and as
// unlimited when it has neither. With a limit, the keys holding the most are
// among the details with their shares. It counts no calls that queued, and
// never sheds.
type keyedSource struct{ s *keyed.Set }

// keyedShareRows is how many keys a keyed set with a limit shows among its
// details, those holding the most.
const keyedShareRows = 10

func (a keyedSource) Name() string                    { return a.s.Name() }
func (a keyedSource) Kind() string                    { return "keyed set" }
func (a keyedSource) Diagnostics(maxLines int) string { return a.s.Diagnostics(maxLines) }

func (a keyedSource) Snapshot() Snapshot {
	st := a.s.Stats()
	snap := Snapshot{
		InUse:     st.Held,
		Waiters:   st.Waiters,
		Broken:    st.Broken,
		Acquired:  st.Acquired,
		TimedOut:  st.TimedOut,
		Cancelled: st.Cancelled,
		Rejected:  st.Rejected,
		Unknown:   QueuedField,
		Details:   []Detail{{"active keys", strconv.Itoa(st.Keys)}},
	}
	limit, limited := a.s.Limit()
	switch g := a.s.Global(); {
	case limited:
		snap.Capacity, snap.Available = limit, max(limit-st.Held, 0)
		for _, k := range a.s.ActiveKeys(keyedShareRows) {
			snap.Details = append(snap.Details, Detail{"key " + strconv.Quote(k.Key), fmt.Sprintf(
				"held %d, share %d, borrowed %d; weight %d, guarantee %d, capacity %d; %d waiting",
				k.Held, k.Share, k.Borrowed, k.Weight, k.Guarantee, k.Capacity, k.Waiters)})
		}
	case g != nil:
		snap.Capacity = g.Capacity()
		snap.Available = g.Available()
		snap.Details = append(snap.Details, Detail{"global semaphore", g.String()})
	default:
		snap.Unlimited = true
	}
	if err := a.s.Err(); err != nil {
		snap.Cause = err.Error()
	}
	return snap
}

// controllerSource shows an admission controller by its count resource; memory
// is among the details. Its Rejected, Shed and Cancelled have the core's
// meanings.
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
		InUse:     st.Held.Count,
		Available: max(st.Limits.Count-st.Held.Count, 0),
		Waiters:   st.Waiters + st.MemoryWaiters,
		Acquired:  st.Acquired,
		Queued:    st.QueuedForAdmission + st.QueuedForMemory,
		TimedOut:  st.TimedOut,
		Cancelled: st.Cancelled,
		Rejected:  st.Rejected,
		Shed:      st.Shed,
		Details: []Detail{
			{"memory in use", fmt.Sprintf("%d of %d bytes", st.Held.Memory, st.Limits.Memory)},
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
		snap.Acquired += ms.Acquired
		snap.Queued += ms.Queued
		snap.TimedOut += ms.TimedOut
		snap.Cancelled += ms.Cancelled
		snap.Rejected += ms.Rejected
		snap.Shed += ms.Shed
		member := fmt.Sprintf("%d shares, count %d/%d, %d queued", m.Shares, m.Held.Count, m.Limits.Count, m.Waiters)
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

// limiterSource shows an adaptive limiter by its limit as capacity, its units
// in flight (calls measured with Start included) and the callers waiting for
// it; the algorithm's estimate, its counters and each Priority's are among the
// details. Its Shed counts the callers its deadline rule refused, at once or
// after waiting. It counts no queued, timed-out, cancelled or rejected calls:
// its semaphore, registered on its own, does.
type limiterSource struct{ l *adaptive.Limiter }

func (a limiterSource) Name() string                    { return a.l.Name() }
func (a limiterSource) Kind() string                    { return "adaptive limiter" }
func (a limiterSource) Diagnostics(maxLines int) string { return a.l.Diagnostics(maxLines) }

func (a limiterSource) Snapshot() Snapshot {
	st := a.l.Stats()
	estimate := "unknown"
	if st.Estimate > 0 {
		estimate = strconv.Itoa(st.Estimate)
	}
	snap := Snapshot{
		Capacity:  int64(st.Limit),
		InUse:     int64(st.InFlight),
		Available: int64(st.Available),
		Waiters:   st.Waiters,
		Acquired:  st.Acquired,
		Shed:      st.Shed,
		Unknown:   QueuedField | TimedOutField | CancelledField | RejectedField | BrokenField,
		Details: []Detail{
			{"capacity estimate", estimate},
			{"calls ended", fmt.Sprintf("%d succeeded, %d dropped, %d ignored", st.Succeeded, st.Dropped, st.Ignored)},
			{"shed at once", strconv.FormatUint(st.ShedAtOnce, 10)},
			{"windows", fmt.Sprintf("%d, %d raised the limit, %d lowered it", st.Windows, st.Increases, st.Decreases)},
		},
	}
	for _, p := range []adaptive.Priority{adaptive.Critical, adaptive.Default, adaptive.Sheddable} {
		v := st.Levels[p]
		snap.Details = append(snap.Details, Detail{"level " + p.String(), fmt.Sprintf(
			"%d units in flight, %d waiting, %d acquired, %d shed (%d at once)", v.InFlight, v.Waiting, v.Acquired, v.Shed, v.ShedAtOnce)})
	}
	return snap
}
