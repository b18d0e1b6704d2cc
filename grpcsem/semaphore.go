package grpcsem

import (
	"context"
	"github.com/fairsem/semaphore/adaptive"
	"maps"

	"github.com/fairsem/semaphore"
)

// Semaphore returns a Limiter that admits a call once it holds weight(ctx,
// call) units of s (one unit when weight is nil), waiting in s's FIFO wait
// list, bounded by s's WithMaxWaiters, and gives the units back when the call
// ends. The units are labelled with the call's method (see
// semaphore.ContextWithHolderLabel), so that s's Diagnostics groups its holders by
// method. A server handler reaches them with UnitsFrom.
//
// Admit fails as s.AcquireUnits does. It panics if weight returns a negative
// number; Semaphore panics if s is nil.
func Semaphore(s *semaphore.Semaphore, weight func(ctx context.Context, call Call) int64) Limiter {
	if s == nil {
		panic("grpcsem: Semaphore(nil)")
	}
	return semLimiter{s: s, weight: weight}
}

type semLimiter struct {
	s      *semaphore.Semaphore
	weight func(context.Context, Call) int64 // nil: one unit a call
}

func (l semLimiter) Admit(ctx context.Context, call Call) (Token, error) {
	n := int64(1)
	if l.weight != nil {
		if n = l.weight(ctx, call); n < 0 {
			panic("grpcsem: weight " + itoa(n) + " for " + call.FullMethod + " on " + l.s.String() + ": negative")
		}
	}
	u, err := l.s.AcquireUnits(semaphore.ContextWithHolderLabel(ctx, call.FullMethod), n)
	if err != nil {
		return nil, err
	}
	return unitsToken{u}, nil
}

// unitsToken gives its units back when the call ends. It holds one pointer,
// so storing it in a Token allocates nothing.
type unitsToken struct{ u *semaphore.Units }

func (t unitsToken) Done(adaptive.Verdict) { t.u.Release() }

// UnitsFrom returns the units held by the call whose context ctx is, when it
// was admitted by a Semaphore limiter (or one wrapping it, see Token), or nil. The handler may give some back
// early (Return, Split) or keep them past the call (Detach, then Release the
// count itself); whatever the Units still owns when the call ends is released.
func UnitsFrom(ctx context.Context) *semaphore.Units {
	t, _ := tokenAs[unitsToken](TokenFrom(ctx))
	return t.u
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
