package prom_test

import (
	"context"
	"strings"
	"testing"

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
