package main

import (
	"os"
	"strings"
	"testing"

	"github.com/fairsem/semaphore/amqpsem/amqptest"
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
	goleak.VerifyTestMain(m)
}

func TestMigrationsExample(t *testing.T) {
	fulltest.Long(t)
	if _, err := amqptest.Server(); err != nil && os.Getenv("CI") != "true" {
		t.Skipf("skipped: %v", err)
	}
	var out strings.Builder
	require.NoError(t, run(&out, ""))
	t.Log("\n" + out.String())
	for _, want := range []string{"the slot came back", "verified: its slot was removed", "no client holds slot [2] any more",
		"now 1 slot(s), 0 held", "at most 2 slots were held at once (the bound is 2)"} {
		assert.Contains(t, out.String(), want)
	}
}
