package grpcsem

import (
	"context"
	"maps"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/shed"
)

// Semaphore returns a Limiter that admits a call once it holds weight(ctx,
// call) units of s (one unit when weight is nil), waiting in s's FIFO wait
// list, bounded by s's WithMaxWaiters, if the deadline rule lets it (see the
// package documentation), and gives the units back when the call ends. The
// rule reads the call's budget and Priority from the interceptor, and the
// usual round trip it measures itself, from admission to the end of the call.
// The units are labelled with the call's method (see
// semaphore.ContextWithHolderLabel), so that s's Diagnostics groups its
// holders by method. A server handler reaches them with UnitsFrom.
//
// Admit fails as s.AcquireUnits does, or, refused by the rule, with an error
// whose outcome is semaphore.Shed. It panics if weight returns a negative
// number; Semaphore panics if s is nil.
func Semaphore(s *semaphore.Semaphore, weight func(ctx context.Context, call Call) int64) Limiter {
	if s == nil {
		panic("grpcsem: Semaphore(nil)")
	}
	l := &semLimiter{s: s, weight: weight}
	l.door.Init(shed.DefaultConfig())
	return l
}

type semLimiter struct {
	s      *semaphore.Semaphore
	weight func(context.Context, Call) int64 // nil: one unit a call
	door   shed.Door                         // the deadline rule's readings: the calls' units by level, their round trip
}

func (l *semLimiter) Admit(ctx context.Context, call Call) (Token, error) {
	n := int64(1)
	if l.weight != nil {
		if n = l.weight(ctx, call); n < 0 {
			panic("grpcsem: weight " + itoa(n) + " for " + call.FullMethod + " on " + l.s.String() + ": negative")
		}
	}
	lv := shed.Level(adaptive.PriorityFrom(ctx))
	t := &unitsToken{gate: unitsGate{Semaphore: l.s, label: call.FullMethod}, door: &l.door, level: lv, n: n}
	start, _, err := l.door.Acquire(ctx, &t.gate, n, lv, nil, semSubject{l.s})
	if err != nil {
		return nil, err
	}
	t.start = start
	return t, nil
}

// unitsGate is the door's gate: s, taking the call's units as a
// semaphore.Units labelled with its method.
type unitsGate struct {
	*semaphore.Semaphore
	label string
	u     *semaphore.Units // the units taken, once granted
}

// TryAcquire declines: the units' label needs a context, which
// TryAcquireUnits takes none of, so the door takes them through Acquire,
// which grants them at once when they are free and nobody waits, as a try
// would.
func (g *unitsGate) TryAcquire(int64) bool { return false }

func (g *unitsGate) Acquire(ctx context.Context, n int64) error {
	u, err := g.AcquireUnits(semaphore.ContextWithHolderLabel(ctx, g.label), n)
	g.u = u
	return err
}

// Release gives back the units taken: the door's hand-on of a grant too late.
func (g *unitsGate) Release(int64) { g.u.Release() }

// semSubject names s in the door's errors, as s names itself.
type semSubject struct{ s *semaphore.Semaphore }

func (x semSubject) Label() string { return errs.Label("semaphore", x.s.Name(), x.s) }

// unitsToken gives its units back when the call ends, and tells the door the
// call's round trip.
type unitsToken struct {
	gate  unitsGate
	door  *shed.Door
	level shed.Level
	n     int64 // units the door counts for the call, whatever the handler did with its Units
	start time.Time
}

func (t *unitsToken) Done(adaptive.Verdict) {
	t.gate.u.Release()
	t.door.Ended(t.level, t.n)
	t.door.Observe(time.Since(t.start))
}

// UnitsFrom returns the units held by the call whose context ctx is, when it
// was admitted by a Semaphore limiter (or one wrapping it, see Token), or nil. The handler may give some back
// early (Return, Split) or keep them past the call (Detach, then Release the
// count itself); whatever the Units still owns when the call ends is released.
func UnitsFrom(ctx context.Context) *semaphore.Units {
	t, _ := tokenAs[*unitsToken](TokenFrom(ctx))
	if t == nil {
		return nil
	}
	return t.gate.u
}

// MethodWeights returns a weight function for Semaphore: the weight of a
// method is weights[call.FullMethod], or otherwise for a method not in the
// map. The map is copied. It panics on a negative weight.
func MethodWeights(weights map[string]int64, otherwise int64) func(ctx context.Context, call Call) int64 {
	if otherwise < 0 {
		panic("grpcsem: MethodWeights: weight " + itoa(otherwise) + " for other methods: negative")
	}
	for m, n := range weights {
		if n < 0 {
			panic("grpcsem: MethodWeights: weight " + itoa(n) + " for " + m + ": negative")
		}
	}
	weights = maps.Clone(weights)
	return func(_ context.Context, call Call) int64 {
		if n, ok := weights[call.FullMethod]; ok {
			return n
		}
		return otherwise
	}
}
