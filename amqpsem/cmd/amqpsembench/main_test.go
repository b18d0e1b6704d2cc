package main

import (
	"fmt"
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
	if spec := os.Getenv(workerEnv); spec != "" {
		// The program re-runs its own binary as a worker: here, this test binary.
		if err := worker(spec, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "amqpsembench worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// A smoke run of the benchmark program, as .ci/run used to run it: -quick
// against a broker it starts, every section printed.
func TestRun_QuickPrintsEverySection(t *testing.T) {
	fulltest.Long(t)
	if _, err := amqptest.Server(); err != nil && os.Getenv("CI") != "true" {
		t.Skipf("skipped: %v", err)
	}
	var out strings.Builder
	require.NoError(t, run([]string{"-quick"}, &out))
	t.Log("\n" + out.String())
	for _, want := range []string{
		"floor, raw amqp091 requests, 20 rounds: round trip (basic.qos) median",
		"uncontended, 1 slot, 20 rounds: acquire median",
		"throughput: 1 processes x 4 goroutines, 4 slots",
		"throughput: 2 processes x 4 goroutines, 4 slots",
		"handoff to a waiter of another handle (events): release start to grant median",
		"handoff to a waiter of another handle (polling): release start to grant median",
	} {
		assert.Contains(t, out.String(), want)
	}
}

func TestRun_BadFlagIsAnError(t *testing.T) {
	assert.Error(t, run([]string{"-rounds", "x"}, &strings.Builder{}))
}
