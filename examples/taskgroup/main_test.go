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
	require.Contains(t, out.String(), "uploaded 200 files")
	require.Contains(t, out.String(), "(budget 64)")
	require.Contains(t, out.String(), "second batch: file 50: upload failed: connection reset")
}
