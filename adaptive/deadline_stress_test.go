package adaptive_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// TestLimiter_StressTheRuleNeverServesLateNorPastTheLimitAndKeepsFIFO runs
// hundreds of concurrent callers of every Priority, with weights, deadlines,
// no deadline and cancellations, arriving at distinct instants of a synctest
// bubble (their goroutines run concurrently, under the race detector), in
// front of a backend that takes exactly 1ms, with the deadline rule on (and
// WithStandingQueue, and a floor, in turn). It checks that no granted call is
// served after its deadline, that the units held never exceed the limit, that
// calls are granted in the order they arrived (across levels and within each),
// and that every unit and counter adds up.
func TestLimiter_StressTheRuleNeverServesLateNorPastTheLimitAndKeepsFIFO(t *testing.T) {
	for name, opts := range map[string][]adaptive.Option{
		"default":           nil,
		"standing queue":    {adaptive.WithStandingQueue(2*time.Millisecond, 20*time.Millisecond)},
		"floor":             {adaptive.WithFloor(adaptive.Sheddable, 0.25)},
		"floors everywhere": {adaptive.WithFloor(adaptive.Default, 0.5), adaptive.WithFloor(adaptive.Critical, 1)},
	} {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(3) {
				synctest.Test(t, func(t *testing.T) { stressRule(t, seed, opts) })
			}
		})
	}
}

type stressed struct {
	level            adaptive.Priority
	arrived, granted time.Time
	ok               bool
}

func stressRule(t *testing.T, seed uint64, opts []adaptive.Option) {
	const limit, service = 4, time.Millisecond
	sem := semaphore.New(limit)
	l := adaptive.New(sem, fixedLimit(limit), opts...)
	r := rand.New(rand.NewPCG(seed, 7))
	levels := []adaptive.Priority{adaptive.Critical, adaptive.Default, adaptive.Sheddable}
	deadlines := []time.Duration{0, 1500 * time.Microsecond, 3 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond}
	var held, late, overLimit atomic.Int64
	var mu sync.Mutex
	var calls []*stressed
	var wg sync.WaitGroup
	for range 600 {
		// Distinct instants: arrival order is the order of joining the
		// wait list.
		time.Sleep(time.Duration(1+r.IntN(400)) * time.Microsecond)
		s := &stressed{level: levels[r.IntN(3)], arrived: time.Now()}
		n := int64(1 + r.IntN(2))
		d := deadlines[r.IntN(len(deadlines))]
		cancelAfter := time.Duration(0)
		if r.IntN(10) == 0 {
			cancelAfter = time.Duration(1+r.IntN(3000)) * time.Microsecond
		}
		mu.Lock()
		calls = append(calls, s)
		mu.Unlock()
		wg.Go(func() {
			ctx, cancel := context.WithCancel(adaptive.ContextWithPriority(context.Background(), s.level))
			defer cancel()
			if d > 0 {
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			if cancelAfter > 0 {
				defer time.AfterFunc(cancelAfter, cancel).Stop()
			}
			measured := l.Stats().Windows > 0 // the rule knows the round trip: before, it cannot refuse on it
			c, err := l.AcquireN(ctx, n)
			if err != nil {
				return
			}
			mu.Lock()
			s.granted, s.ok = time.Now(), true
			mu.Unlock()
			if h := held.Add(n); h > limit {
				overLimit.Add(1)
			}
			time.Sleep(service)
			if dl, ok := ctx.Deadline(); ok && measured && cancelAfter == 0 && time.Now().After(dl) {
				late.Add(1)
			}
			held.Add(-n)
			c.Done(adaptive.Success)
		})
	}
	wg.Wait()
	assert.Zero(t, late.Load(), "no call served after its deadline once the round trip is measured")
	assert.Zero(t, overLimit.Load(), "never more units held than the limit")
	var granted int
	for i, a := range calls {
		if !a.ok {
			continue
		}
		granted++
		for _, b := range calls[i+1:] {
			if b.ok && b.granted.Before(a.granted) && b.granted.After(a.arrived) {
				t.Fatalf("a %v call arriving at %v was granted at %v, before a %v call that arrived at %v and was granted at %v",
					b.level, b.arrived, b.granted, a.level, a.arrived, a.granted)
			}
		}
	}
	st := l.Stats()
	require.Equal(t, uint64(granted), st.Acquired)
	var byLevel uint64
	for _, lv := range st.Levels {
		byLevel += lv.Acquired
		assert.Zero(t, lv.InFlight)
		assert.Zero(t, lv.Waiting)
	}
	assert.Equal(t, st.Acquired, byLevel)
	assert.Equal(t, st.Acquired, st.Succeeded)
	assert.Zero(t, st.Waiters)
	assert.Positive(t, st.Shed, "the load was heavy enough to shed")
	assert.Equal(t, sem.Capacity(), sem.Available(), "every unit came back")
}
