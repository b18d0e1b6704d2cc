package adaptive_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/internal/fulltest"
)

// psBackend serves units at base latency up to capacity units in flight; past
// it, every call slows in proportion to the units in flight (processor
// sharing, fixed when the call starts).
type psBackend struct {
	capacity int64
	base     time.Duration
	inFlight atomic.Int64
}

func (b *psBackend) call(units int64) {
	n := b.inFlight.Add(units)
	defer b.inFlight.Add(-units)
	d := b.base
	if n > b.capacity {
		d = time.Duration(int64(b.base) * n / b.capacity)
	}
	time.Sleep(d)
}

// converge runs callers that always want more than the capacity, each call
// taking one of weights units, for a simulated 20s, and returns the limits seen
// over the last 10s.
func converge(t *testing.T, weights []int64) []int {
	var limits []int
	synctest.Test(t, func(t *testing.T) {
		b := &psBackend{capacity: 40, base: 20 * time.Millisecond}
		l := adaptive.New(semaphore.New(10), nil)
		// A cancellation, not a deadline, ends the run: callers refused at
		// once for a deadline too close would spin without letting the
		// bubble's clock advance.
		ctx, cancel := context.WithCancel(context.Background())
		defer time.AfterFunc(20*time.Second, cancel).Stop()
		var wg sync.WaitGroup
		for g := range 80 {
			wg.Go(func() {
				w := weights[g%len(weights)]
				for ctx.Err() == nil {
					_ = l.DoN(ctx, w, func(context.Context) error { b.call(w); return nil })
				}
			})
		}
		time.Sleep(10 * time.Second)
		for range 100 {
			time.Sleep(100 * time.Millisecond)
			limits = append(limits, l.Limit())
		}
		wg.Wait()
	})
	return limits
}

func TestLimiter_WeightedCallsConvergeToTheSameCapacityInUnitsAsUnitCalls(t *testing.T) {
	fulltest.Long(t)
	median := func(l []int) int {
		l = slices.Clone(l)
		slices.Sort(l)
		return l[len(l)/2]
	}
	units := median(converge(t, []int64{1}))
	assert.InDelta(t, 40, units, 10, "unit calls: within 25%% of the capacity of 40 units")
	for _, weights := range [][]int64{{1, 2, 3, 4}, {4}} {
		limits := converge(t, weights)
		assert.InDelta(t, units, median(limits), float64(units)*0.15, "weights %v: %v", weights, limits)
		within(t, limits, 30, 70)
	}
}
