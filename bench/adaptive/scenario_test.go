package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArrivals_SameSeedSameArrivals(t *testing.T) {
	for _, sc := range scenarios {
		assert.Equal(t, sc.arrivals(7), sc.arrivals(7), sc.name)
		assert.NotEqual(t, sc.arrivals(7), sc.arrivals(8), sc.name)
	}
}

func TestArrivals_EachPhaseAtItsRate(t *testing.T) {
	for _, sc := range scenarios {
		sc.phaseLen = 20 * time.Second
		arr := sc.arrivals(1)
		n := make([]int, len(sc.phases))
		for i, rq := range arr {
			if i > 0 {
				require.Greater(t, rq.at, arr[i-1].at)
			}
			n[sc.phaseAt(rq.at)]++
		}
		for p, ph := range sc.phases {
			assert.InEpsilon(t, ph.rate*sc.phaseLen.Seconds(), float64(n[p]), 0.05, "scenario %s, phase %d", sc.name, p+1)
		}
	}
}

func TestScenarios_NamedUniquelyWithStaticLimitsAtEachCapacity(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range scenarios {
		assert.False(t, seen[sc.name], "scenario %s twice", sc.name)
		seen[sc.name] = true
		got, err := scenarioNamed(sc.name)
		require.NoError(t, err)
		assert.Equal(t, sc.name, got.name)
		for _, ph := range sc.phases {
			assert.Contains(t, sc.statics, ph.capacity, "scenario %s: the best static limit needs one at each capacity", sc.name)
		}
		assert.LessOrEqual(t, sc.queueBudget, sc.deadline, sc.name)
		assert.NotEmpty(t, sc.targets, sc.name)
	}
	_, err := scenarioNamed("z")
	assert.ErrorContains(t, err, "want one of a, b-fifo, b-thrash, start")
}
