package adaptive

import (
	"fmt"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
)

// Reading reads the Limiter in the core's plain values, for a debug page or a
// metrics exporter. The numbers of the limit are the Limiter's own: Capacity
// is the limit last applied, Held the units in flight (granted and not ended,
// counted, Start's included), Acquired the calls it granted and Shed those its
// deadline rule refused, at once or after waiting. The numbers of the wait are its gate's, the
// semaphore Acquire and Do wait on (the one it drives, when it drives a
// semaphore, whose other users count too): Available, Waiters, HeadWait,
// Queued, Broken and Cause. The Limiter does not count the calls that timed
// out, were cancelled or were rejected: those are unknown. The estimate of the
// capacity, the usual round trip the rule reads, the verdicts, the windows, the
// callers waiting through the Limiter and each Priority's units and calls are
// among the details.
func (l *Limiter) Reading() semaphore.Reading {
	st := l.Stats()
	g := l.gate.Reading()
	r := semaphore.Reading{
		Kind:      "adaptive limiter",
		Name:      st.Name,
		Capacity:  int64(st.Limit),
		Held:      int64(st.InFlight),
		Available: g.Available,
		Waiters:   g.Waiters,
		HeadWait:  g.HeadWait,
		Queued:    g.Queued,
		Broken:    g.Broken,
		Cause:     g.Cause,
		Acquired:  st.Acquired,
		Shed:      st.Shed,
		Unknown:   semaphore.TimedOutField | semaphore.CancelledField | semaphore.RejectedField,
	}
	estimate := "unknown"
	if st.Estimate > 0 {
		estimate = strconv.Itoa(st.Estimate)
	}
	lastChange := "never"
	if !st.LastChange.IsZero() {
		lastChange = time.Since(st.LastChange).Round(time.Millisecond).String() + " ago"
	}
	rtt := "unknown"
	if d := l.door.RTT(); d > 0 {
		rtt = d.String()
	}
	gate := "its own semaphore"
	if l.gate == l.target {
		gate = g.Kind + " " + strconv.Quote(g.Name)
	}
	r.Details = []semaphore.Detail{
		{Name: "capacity estimate", Value: estimate},
		{Name: "algorithm", Value: fmt.Sprintf("%T", l.alg)},
		{Name: "waits on", Value: gate},
		{Name: "verdicts", Value: fmt.Sprintf("%d succeeded, %d dropped, %d ignored", st.Succeeded, st.Dropped, st.Ignored)},
		{Name: "windows", Value: fmt.Sprintf("%d, %d raised the limit, %d lowered it", st.Windows, st.Increases, st.Decreases)},
		{Name: "last change", Value: lastChange},
		{Name: "usual round trip", Value: rtt},
		{Name: "waiting through the limiter", Value: fmt.Sprintf("%d calls", st.Waiters)},
		{Name: "shed at once", Value: strconv.FormatUint(st.ShedAtOnce, 10)},
	}
	for _, p := range [...]Priority{Critical, Default, Sheddable} {
		v := st.Levels[p]
		r.Details = append(r.Details, semaphore.Detail{Name: "level " + p.String(), Value: fmt.Sprintf(
			"%d units in flight, %d waiting, %d acquired, %d shed (%d at once)", v.InFlight, v.Waiting, v.Acquired, v.Shed, v.ShedAtOnce)})
	}
	return r
}
