package main

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	xsemaphore "golang.org/x/sync/semaphore"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// A strategy admits requests to a backend. do waits for admission as long as
// queue allows, then calls call with ctx (the request's deadline), and tells
// how the request ended.
type strategy interface {
	do(ctx, queue context.Context, call func(context.Context) error) ending
	limit() int
}

// A namedStrategy is one contestant: make returns a fresh one for each run.
type namedStrategy struct {
	name  string
	group string // "static" (the reference), "adaptive" (this module's algorithms), "failsafe" or "peer"
	make  func() strategy
}

// algorithms are this module's adaptive algorithms, each run with FIFO
// waiting and with the standing-queue policy: adding one is one entry, and a
// scenario names those it runs. They take their published defaults except the
// initial and least limits (the scenario's initial limit, and 1: the
// defaults' least limit of 20 of AIMD and Gradient2 sits above the capacities
// of the scenarios).
var algorithms = []struct {
	name string
	make func(initial int) adaptive.Algorithm
}{
	// The package's default algorithm goes first: Capacity, as New gives it,
	// starting from the semaphore's capacity.
	{"Capacity", func(int) adaptive.Algorithm { return nil }},
	{"AIMD", func(initial int) adaptive.Algorithm {
		return adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: initial, MinLimit: 1})
	}},
	{"Vegas", func(initial int) adaptive.Algorithm {
		return adaptive.NewVegas(adaptive.VegasConfig{InitialLimit: initial, MinLimit: 1})
	}},
	{"Gradient2", func(initial int) adaptive.Algorithm {
		return adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: initial, MinLimit: 1})
	}},
}

// standingQueue is the standing-queue policy of the README's recommendation.
func standingQueue() adaptive.Option {
	return adaptive.WithStandingQueue(5*time.Millisecond, 100*time.Millisecond)
}

// strategies lists the contestants of a scenario: its static limits (with
// FIFO waiting and with the standing-queue policy), its algorithms (with
// both), failsafe-go's adaptive limiter with its defaults and tuned for the
// scenario, and x/sync's semaphore at the limit a user would size it to.
func (sc scenario) strategies() []namedStrategy {
	var s []namedStrategy
	for _, n := range sc.statics {
		s = append(s, namedStrategy{name: "static " + strconv.Itoa(n), group: "static",
			make: func() strategy { return &static{semaphore.New(int64(n))} }})
	}
	for _, n := range sc.statics {
		s = append(s, namedStrategy{name: "static " + strconv.Itoa(n) + " +standing", group: "static",
			make: func() strategy { return newOurs(n, fixed(n), standingQueue()) }})
	}
	for _, a := range algorithms {
		if !slices.Contains(sc.algorithms, a.name) {
			continue
		}
		for _, initial := range sc.initials {
			name := a.name
			if len(sc.initials) > 1 {
				name += " from " + strconv.Itoa(initial)
			}
			s = append(s,
				namedStrategy{name: name, group: "adaptive", make: func() strategy { return newOurs(initial, a.make(initial)) }},
				namedStrategy{name: name + " +standing", group: "adaptive",
					make: func() strategy { return newOurs(initial, a.make(initial), standingQueue()) }})
		}
	}
	return append(s,
		namedStrategy{name: "failsafe-go defaults", group: "failsafe", make: func() strategy {
			return &failsafe{l: adaptivelimiter.NewWithDefaults[any]()}
		}},
		namedStrategy{name: "failsafe-go tuned", group: "failsafe", make: sc.tuned.strategy},
		namedStrategy{name: "x/sync " + strconv.Itoa(sc.peerLimit), group: "peer",
			make: func() strategy { return &xsync{xsemaphore.NewWeighted(int64(sc.peerLimit)), sc.peerLimit} }})
}

// static is a fixed limit: a core semaphore, strict FIFO.
type static struct{ sem *semaphore.Semaphore }

func (s *static) do(ctx, queue context.Context, call func(context.Context) error) ending {
	start := time.Now()
	if err := s.sem.Acquire(queue, 1); err != nil {
		return waitEnding(queue, start)
	}
	defer s.sem.Release(1)
	return callEnding(call(ctx))
}

func (s *static) limit() int { return int(s.sem.Capacity()) }

// xsync is golang.org/x/sync/semaphore at a fixed limit: FIFO, waiting
// within the queue budget.
type xsync struct {
	sem *xsemaphore.Weighted
	n   int
}

func (x *xsync) do(ctx, queue context.Context, call func(context.Context) error) ending {
	start := time.Now()
	if err := x.sem.Acquire(queue, 1); err != nil {
		return waitEnding(queue, start)
	}
	defer x.sem.Release(1)
	return callEnding(call(ctx))
}

func (x *xsync) limit() int { return x.n }

// ours is this module's adaptive Limiter. A request that times out at the
// backend is TimedOut, which the Limiter judges.
type ours struct{ l *adaptive.Limiter }

// newOurs starts the semaphore at the scenario's initial limit, which the
// default algorithm (nil) starts from.
func newOurs(initial int, alg adaptive.Algorithm, opts ...adaptive.Option) *ours {
	return &ours{adaptive.New(semaphore.New(int64(initial)), alg, opts...)}
}

func (o *ours) do(ctx, queue context.Context, call func(context.Context) error) ending {
	start := time.Now()
	// The request's deadline is ctx's; the queue budget bounds the wait alone,
	// as a caller with a deadline and a shorter wait bound says it.
	dl, _ := queue.Deadline()
	c, err := o.l.AcquireTimeout(ctx, 1, dl.Sub(start))
	if err != nil {
		if errors.Is(err, semaphore.ErrTimedOut) {
			return queueTimeout
		}
		return waitEnding(queue, start)
	}
	err = call(ctx)
	c.Done(adaptive.Classify(err)) // a deadline is TimedOut, judged by Done
	return callEnding(err)
}

func (o *ours) limit() int { return o.l.Limit() }

// fixed is an Algorithm that never moves the limit: a static limit behind the
// same standing-queue policy as the adaptive ones.
type fixed int

func (f fixed) Limit() int                 { return int(f) }
func (f fixed) Update(adaptive.Sample) int { return int(f) }

// failsafe is failsafe-go's adaptivelimiter. Without queueing (its default) a
// request is refused when the limiter is full, as its executor does; with
// queueing it waits within its queue budget, unless the queue is past the
// limiter's rejection threshold, and at most maxWait when that is set.
type failsafe struct {
	l       adaptivelimiter.AdaptiveLimiter[any]
	queue   bool
	maxWait time.Duration // with queue: the longest wait for a permit; 0 for the request's queue budget
}

func (f *failsafe) do(ctx, queue context.Context, call func(context.Context) error) ending {
	start := time.Now()
	var p adaptivelimiter.Permit
	switch {
	case !f.queue:
		var ok bool
		if p, ok = f.l.TryAcquirePermit(); !ok {
			return refused
		}
	case f.maxWait > 0:
		var err error
		if p, err = f.l.AcquirePermitWithMaxWait(queue, f.maxWait); err != nil {
			return waitEnding(queue, start)
		}
	default:
		var err error
		if p, err = f.l.AcquirePermit(queue); err != nil {
			return waitEnding(queue, start)
		}
	}
	e := callEnding(call(ctx))
	if e == served {
		p.Record()
	} else {
		p.Drop() // as its documentation says of an execution that timed out
	}
	return e
}

func (f *failsafe) limit() int { return f.l.Limit() }

// A failsafeConfig is one configuration of failsafe-go's adaptive limiter:
// the knobs that move it on this scenario (see sweep.go).
type failsafeConfig struct {
	recentMin, recentMax time.Duration // WithRecentWindow's bounds
	recentSamples        uint          // and its least number of samples
	recentQuantile       float64       // WithRecentQuantile
	baselineAge          uint          // WithBaselineWindow
	maxLimitFactor       float64       // WithMaxLimitFactor
	rejectInit, rejectAt float64       // WithQueueing's factors; 0: no queueing
	maxWait              time.Duration // with queueing: 0 waits up to the queue budget
}

func (c failsafeConfig) strategy() strategy {
	b := adaptivelimiter.NewBuilder[any]().
		WithLimits(1, 200, 20).
		WithRecentWindow(c.recentMin, c.recentMax, c.recentSamples).
		WithRecentQuantile(c.recentQuantile).
		WithBaselineWindow(c.baselineAge).
		WithMaxLimitFactor(c.maxLimitFactor)
	if c.rejectInit > 0 {
		b = b.WithQueueing(c.rejectInit, c.rejectAt)
	}
	return &failsafe{l: b.Build(), queue: c.rejectInit > 0, maxWait: c.maxWait}
}
