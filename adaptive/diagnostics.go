package adaptive

import (
	"fmt"
	"strings"
	"time"
)

// Name returns the Limiter's name (WithName, or its semaphore's).
func (l *Limiter) Name() string { return l.cfg.name }

// Diagnostics returns a dump of the Limiter for a human: its limit against
// the algorithm's estimate of the capacity, the units in flight, the callers
// waiting, the usual round trip the rule reads, its counters and each
// Priority's, from one Stats. maxLines is accepted for the debug page's sake;
// the dump is a few lines whatever it is.
func (l *Limiter) Diagnostics(maxLines int) string {
	s := l.Stats()
	var b strings.Builder
	name := "unnamed"
	if s.Name != "" {
		name = fmt.Sprintf("%q", s.Name)
	}
	fmt.Fprintf(&b, "adaptive limiter %s (%T): limit %d, ", name, l.alg, s.Limit)
	if s.Estimate > 0 {
		fmt.Fprintf(&b, "capacity estimate %d, ", s.Estimate)
	} else {
		b.WriteString("capacity estimate unknown, ")
	}
	fmt.Fprintf(&b, "%d units in flight, %d calls waiting", s.InFlight, s.Waiters)
	if rtt := l.door.RTT(); rtt > 0 {
		fmt.Fprintf(&b, ", usual round trip %v\n", rtt)
	} else {
		b.WriteString(", usual round trip unknown\n")
	}
	fmt.Fprintf(&b, "calls: %d acquired, %d succeeded, %d dropped, %d ignored, %d shed (%d at once)\n",
		s.Acquired, s.Succeeded, s.Dropped, s.Ignored, s.Shed, s.ShedAtOnce)
	fmt.Fprintf(&b, "windows: %d, %d raised the limit, %d lowered it", s.Windows, s.Increases, s.Decreases)
	if !s.LastChange.IsZero() {
		fmt.Fprintf(&b, ", last change %v ago", time.Since(s.LastChange).Round(time.Millisecond))
	}
	b.WriteByte('\n')
	for _, p := range [...]Priority{Critical, Default, Sheddable} {
		v := s.Levels[p]
		fmt.Fprintf(&b, "%s: %d units in flight, %d waiting, %d acquired, %d shed (%d at once)\n",
			p, v.InFlight, v.Waiting, v.Acquired, v.Shed, v.ShedAtOnce)
	}
	return b.String()
}
