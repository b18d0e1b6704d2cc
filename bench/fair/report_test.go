package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSpanOf_MedianAndRange checks the median and the range over runs, in
// any order.
func TestSpanOf_MedianAndRange(t *testing.T) {
	assert.Equal(t, span{med: 2, lo: 1, hi: 9}, spanOf([]float64{9, 1, 2}))
	assert.Equal(t, span{med: 4, lo: 4, hi: 4}, spanOf([]float64{4}))
	assert.Equal(t, "4", span{med: 4, lo: 4, hi: 4}.format(num), "no range for one value")
	assert.Equal(t, "2 [1–9]", span{med: 2, lo: 1, hi: 9}.format(num))
}

// TestReport_ExceededWhenAnyRunExceeded checks that one violation in any run
// makes report say so, in the table and in its result, which fails the
// program.
func TestReport_ExceededWhenAnyRunExceeded(t *testing.T) {
	run := func(violations int64) []outcome {
		return []outcome{{scenario: "equal", limiter: "l", maxInService: 8, violations: violations,
			tenants: []tenantResult{backlogged("a", 1, 10), backlogged("b", 1, 10)}}}
	}
	var out strings.Builder
	assert.False(t, report(&out, [][]outcome{run(0), run(0)}))
	assert.NotContains(t, out.String(), "EXCEEDED")
	assert.Contains(t, out.String(), "Jain's index over weighted shares: 1")

	out.Reset()
	assert.True(t, report(&out, [][]outcome{run(0), run(3)}))
	assert.Contains(t, out.String(), "EXCEEDED 3 times")
}

// TestReport_LatencyRatioPairsEachRunWithItself checks that the light
// tenant's ratio divides each run's p99 beside the others by the same run's
// p99 alone: one slow run beside the others is one ratio, not every one.
func TestReport_LatencyRatioPairsEachRunWithItself(t *testing.T) {
	run := func(beside, alone time.Duration) []outcome {
		return []outcome{
			{scenario: "mixedlight", limiter: "l", maxInService: 8, tenants: []tenantResult{
				{tenant: tenant{name: "heavy", weight: 1, backlog: true}, latencies: []time.Duration{time.Second}},
				{tenant: tenant{name: "light", weight: 1}, latencies: []time.Duration{beside}},
			}},
			{scenario: "mixedlight", limiter: "l, alone", maxInService: 8, tenants: []tenantResult{
				{tenant: tenant{name: "light", weight: 1}, latencies: []time.Duration{alone}},
			}},
		}
	}
	var out strings.Builder
	report(&out, [][]outcome{
		run(60*time.Millisecond, 30*time.Millisecond), // 2x
		run(33*time.Millisecond, 30*time.Millisecond), // 1.1x
		run(36*time.Millisecond, 30*time.Millisecond), // 1.2x
	})
	assert.Contains(t, out.String(), "light's p99 latency beside the others over alone: 1.20x [1.10x–2.00x]")
}
