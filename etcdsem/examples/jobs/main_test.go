package main

import (
	"os"
	"strings"
	"testing"

	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		// The example re-runs its own binary as a worker: here, this test binary.
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

func TestJobsExample(t *testing.T) {
	fulltest.Long(t)
	var out strings.Builder
	require.NoError(t, run(&out, ""))
	t.Log("\n" + out.String())
	assert.Contains(t, out.String(), "rejected=true")
	assert.Contains(t, out.String(), "units came back")
	assert.Contains(t, out.String(), ": clean")
}
