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
	require.Contains(t, out.String(), "ran 20 jobs")
	require.Contains(t, out.String(), "a late reader is refused while the writer waits: true")
	require.Contains(t, out.String(), "the writer got the lock once the readers left")
	require.Contains(t, out.String(), "canceled wait: err == context.Canceled: true")
}
