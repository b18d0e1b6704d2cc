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

// TestRun runs the demo on short phases and checks its accounting, not its
// timings: every call to Acquire is counted once (granted, timed out or
// cancelled at the end), no tenant was seen holding more than its maximum,
// and every unit is given back.
func TestRun(t *testing.T) {
	var out strings.Builder
	r, err := run(&out, load{phase: 150 * time.Millisecond})
	require.NoError(t, err, out.String())
	assert.Positive(t, r.attempts)
	assert.Equal(t, uint64(r.attempts), r.set.Acquired+r.set.TimedOut+r.set.Cancelled, "every call counted once")
	assert.Zero(t, r.set.Rejected, "no queue bound: nothing refused at once")
	for _, tn := range tenants {
		assert.LessOrEqual(t, r.peakHeld[tn.name], tn.capacity, "%s holds at most its maximum", tn.name)
	}
	assert.Zero(t, r.set.Held, "every unit given back")
	assert.Zero(t, r.set.Keys, "no key left active")
	assert.Zero(t, r.set.Waiters)
	assert.True(t, strings.HasPrefix(out.String(), "time  capacity  limit  gold  silver  trial"), out.String())
	assert.Contains(t, out.String(), "served ")
}
