package adaptive

import (
	"math"
	"time"

	"github.com/fairsem/semaphore/internal/shed"
)

// WithStandingQueue drains a standing queue for every caller, as CoDel does
// and as described in "Fail at Scale": the queue is standing when no caller
// has found it empty for longer than interval. Then a Default caller waits at
// most target (a Critical one as its budget allows; a Sheddable one waits at
// most target always): one whose expected wait is longer is refused at once, one whose
// wait reaches target fails, and one granted after waiting longer than target
// in a queue that stood meanwhile gives its slot on at once. Each fails with
// an error matching semaphore.ErrShed (and so ErrQueueFull), as admission's
// shed requests do. While the queue drains in time (a caller found it empty
// within interval), callers wait as their budget allows, so bursts are
// absorbed. The callers cut short are counted in Stats.Shed; they are not
// samples (they never reached the backend).
//
// Without it, the same drain with target 5ms and interval 100ms applies to
// the callers whose context has a deadline (or that a door gave a wait
// budget), unless WithoutDeadlineShedding; this option sets the target and
// interval and extends the drain to callers without one. It panics unless 0 <
// target and 0 < interval.
func WithStandingQueue(target, interval time.Duration) Option {
	if target <= 0 || interval <= 0 {
		panic("adaptive: WithStandingQueue(" + target.String() + ", " + interval.String() + "): both must be positive")
	}
	return func(c *config) { c.shed.Target, c.shed.Interval, c.shed.Always = target, interval, true }
}

// WithoutDeadlineShedding turns the deadline rule off: a caller that finds
// the limit reached waits in the FIFO wait list as long as its context
// allows, and is granted even when too little of its deadline is left to be
// served in time, as a plain semaphore does. The levels keep their caps (a
// Sheddable caller still waits at most the standing-queue target), and
// WithStandingQueue still drains a standing queue.
func WithoutDeadlineShedding() Option { return func(c *config) { c.shed.Off = true } }

// WithFloor gives the calls of priority p a floor: while the level holds less
// than share of the limit (units in flight and waiting), its calls skip the
// cap of their level (they still need a budget that covers their wait), so
// that no level is starved outright. It panics if p is not a Priority or
// share is outside [0, 1].
func WithFloor(p Priority, share float64) Option {
	if !p.valid() || !(share >= 0 && share <= 1) || math.IsNaN(share) {
		panic("adaptive: WithFloor(" + p.String() + ", " + ftoa(share) + "): need a Priority and a share in [0, 1]")
	}
	return func(c *config) { c.shed.Floors[shed.Level(p)] = share }
}
