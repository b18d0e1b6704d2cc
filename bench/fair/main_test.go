package main

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func backlogged(name string, weight, served int64) tenantResult {
	return tenantResult{tenant: tenant{name: name, weight: weight, backlog: true}, served: served}
}

// TestShares_JainIndexIsOneWhenSharesFollowWeights checks the index on shares
// that are exactly fair: equal weights and equal service, and weights 1:4
// served 1:4.
func TestShares_JainIndexIsOneWhenSharesFollowWeights(t *testing.T) {
	got, fair, jain := outcome{tenants: []tenantResult{
		backlogged("a", 1, 50), backlogged("b", 1, 50), backlogged("c", 1, 50), backlogged("d", 1, 50),
	}}.shares()
	assert.Equal(t, []float64{0.25, 0.25, 0.25, 0.25}, got)
	assert.Equal(t, []float64{0.25, 0.25, 0.25, 0.25}, fair)
	assert.InDelta(t, 1, jain, 1e-12)

	got, fair, jain = outcome{tenants: []tenantResult{backlogged("w1", 1, 20), backlogged("w4", 4, 80)}}.shares()
	assert.Equal(t, []float64{0.2, 0.8}, got)
	assert.Equal(t, []float64{0.2, 0.8}, fair)
	assert.InDelta(t, 1, jain, 1e-12)
}

// TestShares_JainIndexIsOneOverNWhenOneTenantTakesAll checks the index's
// lower bound: one of n equal tenants served alone gives 1/n.
func TestShares_JainIndexIsOneOverNWhenOneTenantTakesAll(t *testing.T) {
	got, _, jain := outcome{tenants: []tenantResult{
		backlogged("heavy", 1, 100), backlogged("t1", 1, 0), backlogged("t2", 1, 0), backlogged("t3", 1, 0),
	}}.shares()
	assert.Equal(t, []float64{1, 0, 0, 0}, got)
	assert.InDelta(t, 0.25, jain, 1e-12)
}

// TestShares_WeightedUnequalShares checks the index on a known unfair split:
// weights 1:4 served 1:1 give weighted shares 0.5 and 0.125, an index of
// 0.625² / (2 × (0.25 + 0.015625)) = 0.735...
func TestShares_WeightedUnequalShares(t *testing.T) {
	_, fair, jain := outcome{tenants: []tenantResult{backlogged("w1", 1, 50), backlogged("w4", 4, 50)}}.shares()
	assert.Equal(t, []float64{0.2, 0.8}, fair)
	assert.InDelta(t, 0.625*0.625/(2*(0.25+0.015625)), jain, 1e-12)
}

// TestShares_OnlyBackloggedTenantsCount checks that a tenant that asks for
// less than its share takes no part in the shares or the index.
func TestShares_OnlyBackloggedTenantsCount(t *testing.T) {
	light := tenantResult{tenant: tenant{name: "light", weight: 1}, served: 1000}
	o := outcome{tenants: []tenantResult{backlogged("heavy", 1, 30), light, backlogged("t1", 1, 10)}}
	got, fair, jain := o.shares()
	assert.Equal(t, []float64{0.75, 0.25}, got)
	assert.Equal(t, []float64{0.5, 0.5}, fair)
	assert.InDelta(t, 1/(2*(0.75*0.75+0.25*0.25)), jain, 1e-12)
	assert.Equal(t, 1, backlogIndex(o, 2), "t1 is the second backlogged tenant")
}

// TestBackend_CountsAGrantPastTheLimitAsAViolation checks the independent
// count: a grant that finds the limit already reached is a violation, and is
// not taken as the most in service.
func TestBackend_CountsAGrantPastTheLimitAsAViolation(t *testing.T) {
	b := &backend{limit: 2, perTenant: make([]atomic.Int64, 2)}
	b.serve(0, 2, 0)
	assert.Zero(t, b.violations.Load(), "the limit reached, not exceeded")
	assert.EqualValues(t, 2, b.max.Load())

	b.inService.Store(2) // two units held elsewhere
	b.serve(1, 1, 0)
	assert.EqualValues(t, 1, b.violations.Load())
	assert.EqualValues(t, 2, b.max.Load(), "a violation is not the most in service within the limit")
	assert.EqualValues(t, 2, b.inService.Load(), "serve gives its units back")
	assert.Zero(t, b.perTenant[1].Load())
}

// TestP99_KnownInputs checks the percentile on known samples.
func TestP99_KnownInputs(t *testing.T) {
	assert.Zero(t, p99(nil))
	assert.Equal(t, 5*time.Millisecond, p99([]time.Duration{5 * time.Millisecond}))
	ds := make([]time.Duration, 200)
	for i := range ds {
		ds[len(ds)-1-i] = time.Duration(i+1) * time.Millisecond // 200ms .. 1ms, unsorted
	}
	assert.Equal(t, 198*time.Millisecond, p99(ds))
	assert.Equal(t, 200*time.Millisecond, ds[0], "p99 does not sort its argument")
}

// TestMeasure_NoLimiterExceedsTheLimit runs every scenario with every limiter
// briefly and checks the backend's count: no grant passed the limit, and every
// tenant's requests were served or failed.
func TestMeasure_NoLimiterExceedsTheLimit(t *testing.T) {
	defer func(l time.Duration) { *length = l }(*length)
	*length = 300 * time.Millisecond
	for _, sc := range scenarios() {
		for _, l := range limiters() {
			o := measure(sc, l, sc.tenants, 1)
			require.Len(t, o.tenants, len(sc.tenants))
			assert.Zero(t, o.violations, "%s / %s", sc.name, l.name)
			assert.LessOrEqual(t, o.maxInService, sc.limitOf(), "%s / %s", sc.name, l.name)
			assert.Positive(t, o.maxInService, "%s / %s", sc.name, l.name)
		}
	}
}

// TestTimeShares_FollowTheUnitsHeldOverTime checks the shares of the units
// held over time among backlogged tenants and the largest gap from the fair
// shares, relative to them.
func TestTimeShares_FollowTheUnitsHeldOverTime(t *testing.T) {
	held := func(name string, weight int64, unitTime time.Duration, backlog bool) tenantResult {
		return tenantResult{tenant: tenant{name: name, weight: weight, backlog: backlog}, unitTime: unitTime}
	}
	got, gap := outcome{tenants: []tenantResult{
		held("a", 1, 3*time.Second, true), held("b", 1, time.Second, true), held("light", 1, time.Hour, false),
	}}.timeShares()
	assert.Equal(t, []float64{0.75, 0.25}, got, "the light tenant takes no part")
	assert.InDelta(t, 0.5, gap, 1e-12, "0.25 off a fair 0.5")

	got, gap = outcome{tenants: []tenantResult{held("w1", 1, time.Second, true), held("w4", 4, 4*time.Second, true)}}.timeShares()
	assert.Equal(t, []float64{0.2, 0.8}, got)
	assert.InDelta(t, 0, gap, 1e-12)
}

// TestLatencyRatio_IsTheTenantsP99BesideTheOthersOverAlone checks the pairing
// of a tenant's latencies beside the others and alone.
func TestLatencyRatio_IsTheTenantsP99BesideTheOthersOverAlone(t *testing.T) {
	lat := func(ms ...int) []time.Duration {
		var ds []time.Duration
		for _, m := range ms {
			ds = append(ds, time.Duration(m)*time.Millisecond)
		}
		return ds
	}
	with := outcome{tenants: []tenantResult{
		{tenant: tenant{name: "heavy"}, latencies: lat(500)},
		{tenant: tenant{name: "light"}, latencies: lat(20, 30)},
	}}
	alone := outcome{tenants: []tenantResult{{tenant: tenant{name: "light"}, latencies: lat(20, 25)}}}
	assert.InDelta(t, 30.0/25, latencyRatio(with, alone), 1e-12)
}
