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
	require.Contains(t, out.String(), "burst of 60:")
	require.Contains(t, out.String(), "(limit 4)")
	require.Contains(t, out.String(), "the client that gave up saw: true")
	require.Contains(t, out.String(), "cancelled waits: 1")
	require.Contains(t, out.String(), "GET /report/{id} admitted with 2097152 bytes")
}
