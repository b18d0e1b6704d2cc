package adaptive

import (
	"fmt"
	"strings"
	"time"

	"github.com/fairsem/semaphore/internal/shed"
	"github.com/fairsem/semaphore/internal/statsline"
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

// String writes s on one line, each field under the name the metrics and
// Diagnostics give it, the levels most critical first, for example
//
//	adaptive limiter "backend" limit=19 capacity_estimate=13 in_flight=4 available=15 waiters=0 acquired=6468 succeeded=6400 dropped=12 ignored=52 shed=4 shed_at_once=4 windows=310 increases=40 decreases=9 last_change=2026-03-04T05:06:07.891Z levels=critical{in_flight=1,waiting=0,acquired=900,shed=0,shed_at_once=0},default{...},sheddable{...}
//
// capacity_estimate is "unknown" while Estimate is 0, and last_change "never"
// while LastChange is zero. The name is quoted; an unnamed limiter's line
// begins "unnamed adaptive limiter".
func (s Stats) String() string {
	// One call per field, in the order they are declared: a field added to
	// Stats adds its pair here (TestStats_StringNamesEveryField checks it).
	l := statsline.New("adaptive limiter", s.Name)
	l.Int("limit", int64(s.Limit))
	if s.Estimate > 0 {
		l.Int("capacity_estimate", int64(s.Estimate))
	} else {
		l.Word("capacity_estimate", "unknown")
	}
	l.Int("in_flight", int64(s.InFlight))
	l.Int("available", int64(s.Available))
	l.Int("waiters", int64(s.Waiters))
	l.Uint("acquired", s.Acquired)
	l.Uint("succeeded", s.Succeeded)
	l.Uint("dropped", s.Dropped)
	l.Uint("ignored", s.Ignored)
	l.Uint("shed", s.Shed)
	l.Uint("shed_at_once", s.ShedAtOnce)
	l.Uint("windows", s.Windows)
	l.Uint("increases", s.Increases)
	l.Uint("decreases", s.Decreases)
	if s.LastChange.IsZero() {
		l.Word("last_change", "never")
	} else {
		l.Time("last_change", s.LastChange)
	}
	var lv strings.Builder
	for i, p := range [...]Priority{Critical, Default, Sheddable} {
		v := s.Levels[p]
		if i > 0 {
			lv.WriteByte(',')
		}
		fmt.Fprintf(&lv, "%v{in_flight=%d,waiting=%d,acquired=%d,shed=%d,shed_at_once=%d}",
			p, v.InFlight, v.Waiting, v.Acquired, v.Shed, v.ShedAtOnce)
	}
	l.Word("levels", lv.String())
	return l.String()
}
