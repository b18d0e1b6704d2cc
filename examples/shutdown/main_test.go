package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(&out))
	require.Contains(t, out.String(), "newcomer: semaphore \"db-conns\": acquire 1 unit: broken: \"server shutting down\"")
	require.Contains(t, out.String(), "drain, no grace period: semaphore \"db-conns\": drain: 2 units still out: context deadline exceeded")
	require.Contains(t, out.String(), "drained: semaphore \"db-conns\" (0 of 2 units available, 0 waiting), broken: \"server shutting down\"")
}
