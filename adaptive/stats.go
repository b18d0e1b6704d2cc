package adaptive

import (
	"fmt"
	"strings"
	"time"

	"github.com/fairsem/semaphore/internal/shed"
)

// Stats is a snapshot of a Limiter's limit and counters. The counters only
// grow. Its String is a readable line in the module's words, so %v prints it.
type Stats struct {
	Name      string // from WithName
	Limit     int    // as Limit
	Estimate  int    // the algorithm's estimate of the backend's capacity, in units (see Estimator); 0 unknown
	InFlight  int    // as InFlight
	Available int    // units free at the limit now, as its semaphore reports them (never negative)
	Waiters   int    // calls waiting for the limit now (through Acquire and Do)

	Acquired   uint64    // calls granted (Acquire, Do, Start)
	Succeeded  uint64    // calls ended as Success
	Dropped    uint64    // calls ended as Dropped
	Ignored    uint64    // calls ended without a sample (Ignore, Release)
	Shed       uint64    // calls refused by the rule (see the package documentation): at once, after waiting, or at their grant
	ShedAtOnce uint64    // of those, refused before waiting
	Windows    uint64    // sampling windows given to the algorithm
	Increases  uint64    // windows that raised the limit
	Decreases  uint64    // windows that lowered it
	LastChange time.Time // when the limit last changed; zero if never

	// Levels holds each Priority's part of the calls through Acquire and Do,
	// indexed by Priority (Levels[Critical]); calls measured with Start are
	// in none.
	Levels [3]LevelStats
}

// LevelStats is one Priority's part of a Limiter's Stats.
type LevelStats struct {
	InFlight   int    // units granted and not ended
	Waiting    int    // units waiting for the limit now
	Acquired   uint64 // calls granted
	Shed       uint64 // calls refused by the rule
	ShedAtOnce uint64 // of those, refused before waiting
}

// Stats returns a snapshot of the Limiter.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{
		Name:       l.cfg.name,
		Limit:      int(l.limit.Load()),
		Estimate:   int(l.estimate.Load()),
		InFlight:   int(l.inFlight.Load()),
		Available:  int(l.gate.Available()),
		Waiters:    l.door.Waiters(),
		Acquired:   l.acquired.Load(),
		Succeeded:  l.succeeded,
		Dropped:    l.dropped,
		Ignored:    l.ignored.Load(),
		Windows:    l.windows,
		Increases:  l.increases,
		Decreases:  l.decreases,
		LastChange: l.lastChange,
	}
	for lv := range shed.Levels {
		c := l.door.Level(lv)
		s.Levels[lv] = LevelStats{InFlight: int(c.InFlight), Waiting: int(c.Waiting), Acquired: c.Acquired,
			Shed: c.Shed, ShedAtOnce: c.ShedAtOnce}
		s.Shed += c.Shed
		s.ShedAtOnce += c.ShedAtOnce
	}
	return s
}

// String describes the snapshot in one line, most critical level first:
//
//	adaptive limiter "db": limit 8, capacity estimate 8, 8 units in flight, 0 available, 3 calls waiting;
//	calls: 120 acquired, 100 succeeded, 5 dropped, 7 ignored, 40 shed (36 at once);
//	windows: 12, 3 raised the limit, 2 lowered it;
//	critical: 2 units in flight, 0 waiting, 30 acquired, 0 shed (0 at once); default: ...; sheddable: ...
//
// (on one line). An unnamed limiter is "unnamed"; an unknown estimate is
// "unknown".
func (s Stats) String() string {
	var b strings.Builder
	name := "unnamed"
	if s.Name != "" {
		name = fmt.Sprintf("%q", s.Name)
	}
	fmt.Fprintf(&b, "adaptive limiter %s: limit %d, capacity estimate ", name, s.Limit)
	if s.Estimate > 0 {
		fmt.Fprintf(&b, "%d", s.Estimate)
	} else {
		b.WriteString("unknown")
	}
	fmt.Fprintf(&b, ", %d units in flight, %d available, %d calls waiting; ", s.InFlight, s.Available, s.Waiters)
	fmt.Fprintf(&b, "calls: %d acquired, %d succeeded, %d dropped, %d ignored, %d shed (%d at once); ",
		s.Acquired, s.Succeeded, s.Dropped, s.Ignored, s.Shed, s.ShedAtOnce)
	fmt.Fprintf(&b, "windows: %d, %d raised the limit, %d lowered it", s.Windows, s.Increases, s.Decreases)
	for _, p := range [...]Priority{Critical, Default, Sheddable} {
		v := s.Levels[p]
		fmt.Fprintf(&b, "; %v: %d units in flight, %d waiting, %d acquired, %d shed (%d at once)",
			p, v.InFlight, v.Waiting, v.Acquired, v.Shed, v.ShedAtOnce)
	}
	return b.String()
}
