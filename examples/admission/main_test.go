package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRun runs the demo on a short burst and checks its accounting, not its
// timings: every request is counted exactly once, and every server gives back
// everything (run fails otherwise).
func TestRun(t *testing.T) {
	var out strings.Builder
	results, err := run(&out, load{duration: 300 * time.Millisecond, rate: 2.5 * capacity()})
	require.NoError(t, err, out.String())
	require.Len(t, results, 4)
	for _, r := range results {
		assert.Positive(t, r.offered, r.name)
		total := 0
		for _, n := range r.counts {
			total += n
		}
		assert.Equal(t, r.offered, total, "%s: every request counted once", r.name)
		assert.Len(t, r.latencies, r.counts[served], r.name)
		assert.LessOrEqual(t, r.peakMemory, int64(largeCost*countLimit), r.name)
	}
	assert.Equal(t, results[0].offered, results[2].offered, "the same arrivals for every server")
	for _, r := range results[1:] {
		assert.LessOrEqual(t, r.peakMemory, int64(memoryLimit), "%s: admission bounds the memory of running requests", r.name)
	}
	for _, want := range []string{"== plain semaphore", "== admission, no shedding", "== admission, queue bound", "== admission, its defaults", "goodput", "p99"} {
		assert.Contains(t, out.String(), want)
	}
}
