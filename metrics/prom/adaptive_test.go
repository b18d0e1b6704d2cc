package prom_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/metrics/prom"
)

func TestAdaptiveCollector_ExportsTheLimitAsAGaugeAndItsChanges(t *testing.T) {
	l := adaptive.New(semaphore.New(1), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 4, MinLimit: 1}),
		adaptive.WithName("api"), adaptive.WithWindow(1, 0, 0))
	c, err := l.Acquire(context.Background())
	require.NoError(t, err)
	c.Done(adaptive.Dropped) // 4 -> 3
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewAdaptiveCollector(l))
	want := `
# HELP adaptive_capacity_estimate The algorithm's estimate of the backend's capacity, in units; 0 while unknown or when the algorithm makes none.
# TYPE adaptive_capacity_estimate gauge
adaptive_capacity_estimate{limiter="api"} 0
# HELP adaptive_limit The concurrency limit the limiter applies now.
# TYPE adaptive_limit gauge
adaptive_limit{limiter="api"} 3
# HELP adaptive_limit_changes_total Windows that changed the limit, by direction (up, down).
# TYPE adaptive_limit_changes_total counter
adaptive_limit_changes_total{direction="down",limiter="api"} 1
adaptive_limit_changes_total{direction="up",limiter="api"} 0
# HELP adaptive_calls_total Calls ended, by verdict (success, dropped, ignored).
# TYPE adaptive_calls_total counter
adaptive_calls_total{limiter="api",outcome="dropped"} 1
adaptive_calls_total{limiter="api",outcome="ignored"} 0
adaptive_calls_total{limiter="api",outcome="success"} 0
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"adaptive_limit", "adaptive_capacity_estimate", "adaptive_limit_changes_total", "adaptive_calls_total"))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Panics(t, func() { prom.NewAdaptiveCollector(nil) })
}

func TestAdaptiveCollector_ExportsEachPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(2), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 2, MinLimit: 1}), adaptive.WithName("api"))
		crit, err := l.AcquireN(adaptive.ContextWithPriority(context.Background(), adaptive.Critical), 2)
		require.NoError(t, err)
		// Nothing measured yet: a sheddable call waits its cap, then is shed.
		_, err = l.Acquire(adaptive.ContextWithPriority(context.Background(), adaptive.Sheddable))
		require.ErrorIs(t, err, semaphore.ErrShed)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(prom.NewAdaptiveCollector(l))
		want := `
# HELP adaptive_level_in_flight Units granted at the priority and not ended.
# TYPE adaptive_level_in_flight gauge
adaptive_level_in_flight{limiter="api",priority="critical"} 2
adaptive_level_in_flight{limiter="api",priority="default"} 0
adaptive_level_in_flight{limiter="api",priority="sheddable"} 0
# HELP adaptive_level_acquired_total Calls granted at the priority.
# TYPE adaptive_level_acquired_total counter
adaptive_level_acquired_total{limiter="api",priority="critical"} 1
adaptive_level_acquired_total{limiter="api",priority="default"} 0
adaptive_level_acquired_total{limiter="api",priority="sheddable"} 0
# HELP adaptive_level_shed_total Calls shed at the priority, by when (at_once: refused before waiting; after_waiting: cut after waiting, or handed on at their grant).
# TYPE adaptive_level_shed_total counter
adaptive_level_shed_total{limiter="api",priority="critical",when="after_waiting"} 0
adaptive_level_shed_total{limiter="api",priority="critical",when="at_once"} 0
adaptive_level_shed_total{limiter="api",priority="default",when="after_waiting"} 0
adaptive_level_shed_total{limiter="api",priority="default",when="at_once"} 0
adaptive_level_shed_total{limiter="api",priority="sheddable",when="after_waiting"} 1
adaptive_level_shed_total{limiter="api",priority="sheddable",when="at_once"} 0
# HELP adaptive_shed_total Calls refused by the deadline rule (or a level's cap), at once or after waiting.
# TYPE adaptive_shed_total counter
adaptive_shed_total{limiter="api"} 1
# HELP adaptive_waiters Calls waiting for the limit now.
# TYPE adaptive_waiters gauge
adaptive_waiters{limiter="api"} 0
`
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
			"adaptive_level_in_flight", "adaptive_level_acquired_total", "adaptive_level_shed_total", "adaptive_shed_total", "adaptive_waiters"))
		problems, err := testutil.GatherAndLint(reg)
		require.NoError(t, err)
		assert.Empty(t, problems)
		crit.Release()
	})
}
