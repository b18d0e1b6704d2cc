package main

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRunOne_EveryRequestEndsOnce runs each strategy on short phases in
// simulated time and checks the bookkeeping: every arrival ends exactly once,
// the served ones are counted in the buckets, and the limit is sampled in
// every bucket.
func TestRunOne_EveryRequestEndsOnce(t *testing.T) {
	ld := load{phaseLen: 500 * time.Millisecond, deadline: time.Second, queueBudget: 100 * time.Millisecond}
	arr := arrivals(1, ld.phaseLen)
	for _, s := range strategies() {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := runOne(s, arr, ld)
				total, nServed := 0, 0
				for p := range phases {
					for e := range endings {
						total += r.ends[p][e]
					}
					nServed += r.ends[p][served]
					assert.Len(t, r.latency[p], r.ends[p][served])
				}
				assert.Equal(t, len(arr), total)
				assert.LessOrEqual(t, sum(r.served), nServed, "the buckets count the served requests that completed within the run")
				assert.Len(t, r.lag, len(arr))
				for k, l := range r.limits {
					assert.Positive(t, l, "bucket %d", k)
				}
			})
		})
	}
}

func TestRunOne_AStaticLimitAtCapacityServesALightLoad(t *testing.T) {
	ld := load{phaseLen: time.Second, deadline: time.Second, queueBudget: 100 * time.Millisecond}
	arr := arrivals(1, ld.phaseLen)
	i := 0
	for ; strategies()[i].name != "static 40"; i++ {
	}
	synctest.Test(t, func(t *testing.T) {
		r := runOne(strategies()[i], arr, ld)
		// Phase 1 is 0.7x a capacity of 40: nearly everything is served at
		// about the base latency.
		assert.GreaterOrEqual(t, float64(r.ends[0][served]), 0.95*float64(sum(r.ends[0][:])))
		assert.Less(t, quantile(r.latency[0], 0.5), 60*time.Millisecond)
	})
}
