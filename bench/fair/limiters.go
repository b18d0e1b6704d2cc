package main

import (
	"context"

	"golang.org/x/sync/semaphore"

	core "github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

// A limiter grants units of a global limit to tenants' requests.
type limiter interface {
	acquire(ctx context.Context, tenant string, n int64) (release func(), err error)
}

type namedLimiter struct {
	name string
	make func(tenants []tenant, limit int64) limiter
}

func limiters() []namedLimiter {
	// fair is keyed's fair limit with the tenants' weights and guarantees, and
	// a cap per tenant of limit*capOf, or none (0).
	fair := func(capOf float64) func(ts []tenant, limit int64) limiter {
		return func(ts []tenant, limit int64) limiter {
			of := func(f func(tenant) int64) func(string) int64 {
				return func(key string) int64 {
					for _, t := range ts {
						if t.name == key {
							return f(t)
						}
					}
					return 0
				}
			}
			capacity := keyed.NoKeyLimit
			if capOf > 0 {
				capacity = int64(float64(limit) * capOf)
			}
			return keyedSet{keyed.New(capacity, keyed.WithLimit(limit),
				keyed.WithWeightFunc(of(func(t tenant) int64 { return t.weight })),
				keyed.WithGuaranteeFunc(of(func(t tenant) int64 { return t.guarantee })))}
		}
	}
	return []namedLimiter{
		{"global only (x/sync)", func(_ []tenant, limit int64) limiter {
			return xsync{semaphore.NewWeighted(limit)}
		}},
		{"caps of limit/2 + global (keyed, WithGlobal)", func(_ []tenant, limit int64) limiter {
			return keyedSet{keyed.New(limit/2, keyed.WithGlobal(core.New(limit)))}
		}},
		{"reference: the fair limit's order under one lock", func(ts []tenant, limit int64) limiter {
			weight := func(key string) int64 {
				for _, t := range ts {
					if t.name == key {
						return t.weight
					}
				}
				return 1
			}
			return newReference(limit, weight)
		}},
		{"fair limit (keyed, NoKeyLimit, WithLimit)", fair(0)},
		{"fair limit, caps of limit/2 (keyed, WithLimit)", fair(0.5)},
	}
}

type xsync struct{ w *semaphore.Weighted }

func (x xsync) acquire(ctx context.Context, _ string, n int64) (func(), error) {
	if err := x.w.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return func() { x.w.Release(n) }, nil
}

type keyedSet struct{ s *keyed.Set }

func (k keyedSet) acquire(ctx context.Context, tenant string, n int64) (func(), error) {
	u, err := k.s.Acquire(ctx, tenant, n)
	if err != nil {
		return nil, err
	}
	return u.Release, nil
}

// counting is a limiter that counts per tenant.
type counting interface {
	heldBy(tenant string) int64  // units held
	waitersOf(tenant string) int // calls in progress, not yet granted
}

func (k keyedSet) heldBy(tenant string) int64  { return k.s.KeyStats(tenant).Held }
func (k keyedSet) waitersOf(tenant string) int { return k.s.KeyStats(tenant).Waiters }
