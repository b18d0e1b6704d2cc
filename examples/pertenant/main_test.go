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
// timings: both setups see the same arrivals, every request ends served or
// failed exactly once, and everything is given back (run fails otherwise).
func TestRun(t *testing.T) {
	var out strings.Builder
	results, err := run(&out, load{duration: 300 * time.Millisecond})
	require.NoError(t, err, out.String())
	require.Len(t, results, 4)
	for _, r := range results {
		assert.Positive(t, r.offered, "%s/%s", r.setup, r.class)
		assert.Equal(t, r.offered, r.served+r.failed, "%s/%s", r.setup, r.class)
		assert.Len(t, r.latencies, r.offered)
	}
	assert.Equal(t, results[0].offered, results[2].offered, "the same light arrivals in both setups")
	assert.Equal(t, results[1].offered, results[3].offered, "the same heavy arrivals in both setups")
	for _, want := range []string{"global limit only", "per-tenant + global", "light", "heavy", "p99"} {
		assert.Contains(t, out.String(), want)
	}
}
