package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArrivals_SameSeedSameArrivals(t *testing.T) {
	assert.Equal(t, arrivals(7, time.Second), arrivals(7, time.Second))
	assert.NotEqual(t, arrivals(7, time.Second), arrivals(8, time.Second))
}

func TestArrivals_EachPhaseAtItsRate(t *testing.T) {
	const phaseLen = 20 * time.Second
	arr := arrivals(1, phaseLen)
	require.IsIncreasing(t, arr)
	n := make([]int, len(phases))
	for _, at := range arr {
		n[phaseAt(at, phaseLen)]++
	}
	for p, ph := range phases {
		want := ph.rate() * phaseLen.Seconds()
		assert.InEpsilon(t, want, float64(n[p]), 0.05, "phase %d", p+1)
	}
}
