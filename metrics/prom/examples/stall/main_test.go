package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRun_DiagnosesTheStall(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	got := out.String()
	assert.Contains(t, got, `msg="semaphore: head waiter stalled"`)
	assert.Regexp(t, `head waiter wants 2 units \(waiting \S+\), 0 available, 2 held by 2 holders for \S+ \(oldest: "nightly-report" \(main\.go:\d+\)\)`, got,
		"the watchdog's dump names the forgetful worker")
	assert.Regexp(t, `semaphore "db-conns": 1 unit leaked by a Units acquired at main\.go:\d+ \(nightly-report\)`, got)
	assert.Contains(t, got, `semaphore_wait_duration_seconds_count{outcome="granted",semaphore="db-conns"} 1`)
	assert.Contains(t, got, `semaphore_available_units{semaphore="db-conns"} 2`)
}
