package adaptive

import "time"

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
