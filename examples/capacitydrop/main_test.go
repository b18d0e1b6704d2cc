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
// timings: every request sent ends once (served, refused or failed), every
// call the limiter granted ended with one verdict, none is left in flight, and
// no request was served without a grant.
func TestRun(t *testing.T) {
	var out strings.Builder
	r, err := run(&out, load{phase: 150 * time.Millisecond})
	require.NoError(t, err, out.String())
	assert.Positive(t, r.sent)
	assert.Equal(t, r.sent, r.served+r.refused+r.failed, "every request ends once")
	assert.Zero(t, r.limiter.InFlight, "every call given back")
	assert.Equal(t, r.limiter.Acquired, r.limiter.Succeeded+r.limiter.Dropped+r.limiter.Ignored,
		"every granted call ended with one verdict")
	assert.LessOrEqual(t, uint64(r.served), r.limiter.Acquired, "served only with a grant")
	assert.Positive(t, r.limiter.Limit)
	assert.True(t, strings.HasPrefix(out.String(), "time  capacity  limit  estimate  served/s\n"), out.String())
}
