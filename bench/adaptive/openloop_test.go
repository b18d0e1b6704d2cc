package main

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPoissonArrivals_EachClassAtItsRateInTimeOrder(t *testing.T) {
	arr := poissonArrivals(1, 10*time.Second, [][]float64{{100, 300}, {0, 50}})
	count := map[[2]int]int{}
	for i, a := range arr {
		if i > 0 {
			require.LessOrEqual(t, arr[i-1].at, a.at, "in time order")
		}
		count[[2]int{int(a.at / (10 * time.Second)), a.class}]++
	}
	assert.InDelta(t, 1000, count[[2]int{0, 0}], 150)
	assert.InDelta(t, 3000, count[[2]int{0, 1}], 300)
	assert.Zero(t, count[[2]int{1, 0}], "a rate of 0: no arrivals")
	assert.InDelta(t, 500, count[[2]int{1, 1}], 100)
	assert.Equal(t, arr, poissonArrivals(1, 10*time.Second, [][]float64{{100, 300}, {0, 50}}), "the same seed, the same arrivals")
}

func TestRefusalEnding_AtOnceWithinATenthOfTheBudget(t *testing.T) {
	assert.Equal(t, openToldAtOnce, refusalEnding(0, 200*time.Millisecond))
	assert.Equal(t, openToldAtOnce, refusalEnding(19*time.Millisecond, 200*time.Millisecond))
	assert.Equal(t, openToldLate, refusalEnding(20*time.Millisecond, 200*time.Millisecond))
}

// TestRunOpenLoop_EveryRequestEndsOnce runs every door strategy of the door
// and criticality scenarios that runs in simulated time on short phases, and
// checks the bookkeeping: every arrival ends exactly once, in its phase and
// class, and the served ones have a latency each.
func TestRunOpenLoop_EveryRequestEndsOnce(t *testing.T) {
	const phaseLen = 300 * time.Millisecond
	check := func(t *testing.T, r openResult, arr []openRequest, classes int) {
		want := map[[2]int]int{}
		for _, a := range arr {
			want[[2]int{int(a.at / phaseLen), a.class}]++
		}
		for p := range r.ends {
			for c := range classes {
				total := 0
				for e := range openEndings {
					total += r.ends[p][c][e]
				}
				assert.Equal(t, want[[2]int{p, c}], total, "phase %d class %d", p, c)
				assert.Len(t, r.latency[p][c], r.ends[p][c][openServed])
			}
			assert.NotEmpty(t, r.limits[p], "the limit is sampled in phase %d", p)
		}
	}
	for _, s := range doorStrategies() {
		if s.http {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			arr := poissonArrivals(1, phaseLen, [][]float64{{doorRate}, {doorRate}, {doorRate}})
			synctest.Test(t, func(t *testing.T) {
				b := newSlotBackend(doorCaps[0], doorBase)
				r := runOpenLoop(s.make(b), arr, len(doorCaps), 1, phaseLen, doorBudget, func(p int) { b.slots.Resize(int64(doorCaps[p])) })
				b.finish()
				check(t, r, arr, 1)
			})
		})
	}
	for _, s := range critStrategies() {
		t.Run(s.name, func(t *testing.T) {
			rates := [][]float64{{300, 600, 900}, {300, 600, 900}, {300, 600, 900}}
			arr := poissonArrivals(2, phaseLen, rates)
			synctest.Test(t, func(t *testing.T) {
				b := newBackend(phase{capacity: critCaps[0], base: critBase})
				door := s.make(b.call)
				r := runOpenLoop(door, arr, len(critCaps), 3, phaseLen, critBudget, func(p int) { b.setPhase(phase{capacity: critCaps[p], base: critBase}) })
				if c, ok := door.(interface{ close() }); ok {
					c.close()
				}
				b.stop()
				check(t, r, arr, 3)
			})
		})
	}
}

func TestSlotBackend_ServesFIFOOnItsSlotsAndToTheEndWhenTheCallerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newSlotBackend(1, 20*time.Millisecond)
		start := time.Now()
		first := make(chan time.Duration)
		go func() {
			require.NoError(t, b.call(context.Background()))
			first <- time.Since(start)
		}()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, b.call(ctx), context.DeadlineExceeded, "the caller leaves after 10ms")
		assert.Equal(t, 20*time.Millisecond, <-first)
		require.NoError(t, b.call(context.Background()))
		assert.Equal(t, 60*time.Millisecond, time.Since(start), "the left request was served before the third, to its end")
	})
}
