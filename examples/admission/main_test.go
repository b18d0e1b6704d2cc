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
	require.Contains(t, out.String(), "== without shedding")
	require.Contains(t, out.String(), "== with shedding")
	require.Contains(t, out.String(), "Identified bottleneck(s)")
}
