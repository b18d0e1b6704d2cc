package main

import (
	"context"
	"errors"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// A strategy admits requests to a backend. do runs fn once admitted and
// reports whether it was admitted.
type strategy interface {
	do(ctx context.Context, fn func(context.Context) error) (admitted bool, err error)
	limit() int
}

// static is a fixed limit: a core semaphore, strict FIFO, waiting up to the
// request's deadline.
type static struct{ sem *semaphore.Semaphore }

func newStatic(n int64) *static { return &static{semaphore.New(n)} }

func (s *static) do(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if err := s.sem.Acquire(ctx, 1); err != nil {
		return false, err
	}
	defer s.sem.Release(1)
	return true, fn(ctx)
}

func (s *static) limit() int { return int(s.sem.Capacity()) }

// ours is this module's adaptive Limiter.
type ours struct{ l *adaptive.Limiter }

func newOurs(alg adaptive.Algorithm, opts ...adaptive.Option) *ours {
	return &ours{adaptive.New(semaphore.New(20), alg, opts...)}
}

func (o *ours) do(ctx context.Context, fn func(context.Context) error) (bool, error) {
	admitted := false
	err := o.l.Do(ctx, func(ctx context.Context) error {
		admitted = true
		return fn(ctx)
	})
	return admitted, err
}

func (o *ours) limit() int { return o.l.Limit() }

// failsafe is failsafe-go's adaptivelimiter. Without queueing (its default) a
// request is refused when the limiter is full, as its executor does; with
// queueing it waits up to its deadline, refused when the queue passes the
// limiter's rejection threshold, for at most maxWait.
type failsafe struct {
	l       adaptivelimiter.AdaptiveLimiter[any]
	queue   bool
	maxWait time.Duration // with queue: the longest wait for a permit
}

func (f *failsafe) do(ctx context.Context, fn func(context.Context) error) (bool, error) {
	var p adaptivelimiter.Permit
	if f.queue {
		var err error
		if p, err = f.l.AcquirePermitWithMaxWait(ctx, f.maxWait); err != nil {
			return false, err
		}
	} else {
		var ok bool
		if p, ok = f.l.TryAcquirePermit(); !ok {
			return false, adaptivelimiter.ErrExceeded
		}
	}
	err := fn(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		p.Drop() // as its documentation says for a timed-out execution
	} else {
		p.Record()
	}
	return true, err
}

func (f *failsafe) limit() int { return f.l.Limit() }

type namedStrategy struct {
	name     string
	group    string // static, adaptive, failsafe
	family   string // the chart's row: the strategies drawn together
	standing bool
	make     func() strategy
}

// strategies lists the contestants: static limits with FIFO waiting and with
// the standing-queue policy (the best of them per phase is the "best static"),
// ours with each, and failsafe-go's. Our algorithms take their published
// defaults except MinLimit (1: the defaults of 20 sit above the 8 of the
// capacity dip), and the Limiter its default windows.
func strategies() []namedStrategy {
	standing := adaptive.WithStandingQueue(5*time.Millisecond, 100*time.Millisecond)
	aimd := func() adaptive.Algorithm {
		return adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 20, MinLimit: 1, MaxLimit: 200})
	}
	vegas := func() adaptive.Algorithm {
		return adaptive.NewVegas(adaptive.VegasConfig{InitialLimit: 20, MinLimit: 1})
	}
	gradient := func() adaptive.Algorithm {
		return adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: 20, MinLimit: 1})
	}
	var s []namedStrategy
	s = append(s,
		namedStrategy{name: "Capacity", group: "adaptive", family: "Capacity", make: func() strategy { return newOurs(nil) }},
		namedStrategy{name: "Capacity+codel", group: "adaptive", family: "Capacity", standing: true,
			make: func() strategy { return newOurs(nil, standing) }})
	for _, n := range staticLimits {
		s = append(s, namedStrategy{name: "static " + itoa(int(n)), group: "static", family: "static, FIFO",
			make: func() strategy { return newStatic(n) }})
	}
	for _, n := range staticLimits {
		s = append(s, namedStrategy{name: "static " + itoa(int(n)) + "+codel", group: "static", family: "static +codel", standing: true, make: func() strategy {
			return newOurs(fixed(n), standing)
		}})
	}
	for _, a := range []struct {
		name string
		alg  func() adaptive.Algorithm
	}{{"AIMD", aimd}, {"Vegas", vegas}, {"Gradient2", gradient}} {
		s = append(s,
			namedStrategy{name: a.name, group: "adaptive", family: a.name, make: func() strategy { return newOurs(a.alg()) }},
			namedStrategy{name: a.name + "+codel", group: "adaptive", family: a.name, standing: true,
				make: func() strategy { return newOurs(a.alg(), standing) }})
	}
	s = append(s,
		namedStrategy{name: "failsafe default", group: "failsafe", family: "failsafe-go", make: func() strategy {
			return &failsafe{l: adaptivelimiter.NewWithDefaults[any]()}
		}},
		namedStrategy{name: "failsafe tuned", group: "failsafe", family: "failsafe-go", make: func() strategy {
			return &failsafe{queue: true, maxWait: 5 * time.Millisecond, l: adaptivelimiter.NewBuilder[any]().
				WithLimits(1, 200, 20).
				WithRecentWindow(100*time.Millisecond, time.Second, 20).
				WithQueueing(2, 3).
				Build()}
		}})
	return s
}

var staticLimits = []int64{8, 16, 24, 32, 48}

// fixed is an Algorithm that never moves the limit: a static limit behind the
// same standing-queue policy as the adaptive ones.
type fixed int

func (f fixed) Limit() int                 { return int(f) }
func (f fixed) Update(adaptive.Sample) int { return int(f) }
