package adaptive

import (
	"strconv"
	"time"

	"github.com/fairsem/semaphore/internal/shed"
)

// An Option configures a Limiter.
type Option func(*config)

// config is fixed after New.
type config struct {
	name       string
	minSamples int           // a window closes with at least this many calls
	minTime    time.Duration // and open at least clamp(2 x RTT, minTime, maxTime)
	maxTime    time.Duration
	classify   func(error) Verdict // Do's verdict
	onChange   func(old, new int)  // nil: none
	shed       shed.Config         // the deadline rule, the drain and the floors
}

func newConfig(opts []Option, name string) config {
	c := config{name: name, minSamples: 10, maxTime: 20 * time.Millisecond, classify: Classify, shed: shed.DefaultConfig()}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithName names the Limiter in Stats and errors; by default it takes the name
// of the semaphore or controller it drives.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithWindow sets when a sampling window closes and goes to the algorithm:
// once it holds at least minSamples calls and has been open (from its first
// call's grant) at least twice the shortest round trip in it, but no less than
// minTime and no more than maxTime, so that the calls started under the
// previous limit have ended. Defaults 10, 0 and 20ms: the windows of Netflix's
// WindowedLimit (1s) react too slowly to a capacity step, and under overload
// twice the round trip is itself long (see the README's benchmark). It panics
// if minSamples < 1, minTime < 0 or maxTime < minTime.
func WithWindow(minSamples int, minTime, maxTime time.Duration) Option {
	if minSamples < 1 || minTime < 0 || maxTime < minTime {
		panic("adaptive: WithWindow(" + strconv.Itoa(minSamples) + ", " + minTime.String() + ", " + maxTime.String() +
			"): need minSamples >= 1 and 0 <= minTime <= maxTime")
	}
	return func(c *config) { c.minSamples, c.minTime, c.maxTime = minSamples, minTime, maxTime }
}

// WithClassifier sets how Do and DoN judge a call from fn's error; by default
// Classify. A TimedOut verdict is judged further by Done (see TimedOut). It
// panics if f is nil.
func WithClassifier(f func(err error) Verdict) Option {
	if f == nil {
		panic("adaptive: WithClassifier(nil)")
	}
	return func(c *config) { c.classify = f }
}

// WithOnChange sets a function called with the old and new limit each time
// the limit changes, after it was applied. It runs under the Limiter's lock, in
// the order of the changes: it must be quick, and may call Limit and InFlight
// but no other method of the Limiter. It panics if f is nil.
func WithOnChange(f func(old, new int)) Option {
	if f == nil {
		panic("adaptive: WithOnChange(nil)")
	}
	return func(c *config) { c.onChange = f }
}
