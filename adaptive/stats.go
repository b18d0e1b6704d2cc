package adaptive

import (
	"time"

	"github.com/fairsem/semaphore/internal/statsline"
)

// Stats is a snapshot of a Limiter's limit and counters. The counters only
// grow.
type Stats struct {
	Name     string // from WithName
	Limit    int    // as Limit
	Estimate int    // the algorithm's estimate of the backend's capacity, in units (see Estimator); 0 unknown
	InFlight int    // as InFlight

	Acquired   uint64    // calls granted (Acquire, Do, Start)
	Succeeded  uint64    // calls ended as Success
	Dropped    uint64    // calls ended as Dropped
	Ignored    uint64    // calls ended without a sample (Ignore, Release)
	Shed       uint64    // waits failed by WithStandingQueue
	Windows    uint64    // sampling windows given to the algorithm
	Increases  uint64    // windows that raised the limit
	Decreases  uint64    // windows that lowered it
	LastChange time.Time // when the limit last changed; zero if never
}

// Stats returns a snapshot of the Limiter.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{
		Name:       l.cfg.name,
		Limit:      int(l.limit.Load()),
		Estimate:   int(l.estimate.Load()),
		InFlight:   int(l.inFlight.Load()),
		Acquired:   l.acquired.Load(),
		Succeeded:  l.succeeded,
		Dropped:    l.dropped,
		Ignored:    l.ignored.Load(),
		Shed:       l.shed,
		Windows:    l.windows,
		Increases:  l.increases,
		Decreases:  l.decreases,
		LastChange: l.lastChange,
	}
}

// String writes s on one line, each field under the name the metrics and
// Diagnostics give it, for example
//
//	adaptive limiter "backend" limit=19 capacity_estimate=13 in_flight=4 acquired=6468 succeeded=6400 dropped=12 ignored=52 shed=0 windows=310 increases=40 decreases=9 last_change=2026-03-04T05:06:07.891Z
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
	l.Uint("acquired", s.Acquired)
	l.Uint("succeeded", s.Succeeded)
	l.Uint("dropped", s.Dropped)
	l.Uint("ignored", s.Ignored)
	l.Uint("shed", s.Shed)
	l.Uint("windows", s.Windows)
	l.Uint("increases", s.Increases)
	l.Uint("decreases", s.Decreases)
	if s.LastChange.IsZero() {
		l.Word("last_change", "never")
	} else {
		l.Time("last_change", s.LastChange)
	}
	return l.String()
}
