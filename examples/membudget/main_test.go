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
	require.Contains(t, out.String(), "all requests done: 1048576 of 1048576 bytes available")
}
