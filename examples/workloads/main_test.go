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

// TestRun runs the demo on a short load and checks its accounting, not its
// timings: every request is served exactly once in both setups, the bursty
// workload never borrows more than the pool, and everything is given back (run
// fails otherwise).
func TestRun(t *testing.T) {
	var out strings.Builder
	results, err := run(&out, load{duration: 600 * time.Millisecond})
	require.NoError(t, err, out.String())
	require.Len(t, results, 4)
	for _, r := range results {
		assert.Positive(t, r.offered, "%s/%s", r.setup, r.workload)
		assert.Equal(t, r.offered, r.served, "%s/%s: every request served", r.setup, r.workload)
		assert.Len(t, r.latencies, r.served)
	}
	assert.Equal(t, results[1].offered, results[3].offered, "the same bursts in both setups")
	assert.Zero(t, results[0].peakBorrowed, "nothing to borrow from outside a group")
	assert.LessOrEqual(t, results[3].peakBorrowed, int64(totalMemory*poolShare), "borrowing is bounded by the pool")
	for _, want := range []string{"== one controller", "== group", "steady", "bursty", "p99", "borrowed at most"} {
		assert.Contains(t, out.String(), want)
	}
}
