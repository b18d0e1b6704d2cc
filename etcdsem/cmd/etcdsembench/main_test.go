package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		// The program re-runs its own binary as a worker: here, this test binary.
		runWorker()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/logutil.(*MergeLogger).outputLoop"),
	)
}

func TestRun_QuickPrintsARowPerModeAContendedCellTheShiftAndTheSplit(t *testing.T) {
	fulltest.Long(t)
	var out strings.Builder
	require.NoError(t, run([]string{"-quick", "-duration", "300ms"}, &out))
	t.Log("\n" + out.String())
	for _, mode := range []string{"| plain |", "| blocks |", "| mutex |"} {
		assert.Contains(t, out.String(), "| 4 | 256 | 100µs "+mode)
	}
	assert.Contains(t, out.String(), "\n| 4 | 32 | 100µs | ", "the first contended cell")
	assert.NotContains(t, out.String(), "\n| 8 | 64 | ", "one contended cell when quick")
	for _, capacity := range []string{"8", "16"} {
		for _, mode := range []string{"plain", "blocks"} {
			row := "\n| " + capacity + " | " + mode + " | "
			assert.Equal(t, 2, strings.Count(out.String(), row), "a shift row per shape: %q", row)
		}
	}
	assert.Contains(t, out.String(), "| starts after the units went idle")
	assert.Contains(t, out.String(), "| waits for them all when the load stops")
	for _, mode := range []string{"\n| plain |", "\n| blocks |"} {
		assert.Equal(t, 1, strings.Count(out.String(), mode), "a split row per mode")
	}
	assert.Contains(t, out.String(), "max-min shares [2 7 7]")
	assert.Contains(t, out.String(), "take 100 keys in turn")
	assert.Contains(t, out.String(), "| one etcdsem.Set per process | ")
	assert.Contains(t, out.String(), "| one etcdsem.Semaphore per key and process | ")
}

func TestRun_PartsRunOnlyWhenAsked(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run([]string{"-quick", "-modes", "plain,blocks", "-duration", "100ms", "-table=false", "-shift=false", "-split=false", "-keyed=false"}, &out))
	assert.NotContains(t, out.String(), "| mode | grants/s |", "no table")
	assert.Contains(t, out.String(), "contended:")
	assert.NotContains(t, out.String(), "shifting demand")
	assert.NotContains(t, out.String(), "max-min shares")
	assert.NotContains(t, out.String(), "keyed:")
}

func TestSamples_NearSharesJudgesTheMeasuredPeriod(t *testing.T) {
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ss := splitSamples{
		at:    []time.Time{at(10), at(20), at(30), at(40)},
		units: [][]int64{{0, 16}, {8, 8}, {12, 4}, {13, 3}},
	}
	near, gap := ss.nearShares(at(20), 8, 4)
	assert.Equal(t, 2.0/3, near, "of the samples from the measured period on, two have both within 4 units of 8")
	assert.Equal(t, int64(5), gap, "the farthest from the share: 13 or 3")
	near, gap = splitSamples{}.nearShares(at(0), 8, 4)
	assert.Zero(t, near)
	assert.Zero(t, gap)
}

func TestSplitShares_AreMaxMin(t *testing.T) {
	assert.Equal(t, []int64{2, 7, 7}, splitShares(), "demands 2, 16, 16 on capacity 16")
}

func TestSplitSamples_JudgeAveragesTheMeasuredPeriod(t *testing.T) {
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	ss := splitSamples{
		at:    []time.Time{at(10), at(20), at(30), at(40)},
		units: [][]int64{{0, 16, 0}, {1, 8, 6}, {2, 7, 7}, {3, 5, 8}},
	}
	r := ss.judge(start, at(30), []int64{2, 7, 7})
	assert.Equal(t, []float64{2.5, 6, 7.5}, r.mean, "the samples from the measured period on")
	assert.Equal(t, 0.5, r.near, "the last sample is two units off for process 1")
	assert.Equal(t, 20*time.Millisecond, r.converged, "the first sample within a unit of every share")
	r = splitSamples{at: ss.at[:1], units: ss.units[:1]}.judge(start, at(0), []int64{2, 7, 7})
	assert.Equal(t, time.Duration(-1), r.converged, "never within a unit")
}

func TestRun_ShiftAndSplitRunOnlyTheModesAsked(t *testing.T) {
	fulltest.Long(t)
	var out strings.Builder
	require.NoError(t, run([]string{"-quick", "-modes", "mutex", "-duration", "100ms"}, &out))
	assert.Contains(t, out.String(), "| mutex |")
	assert.NotContains(t, out.String(), "shifting demand", "the shift is plain and block mode's")
	assert.NotContains(t, out.String(), "contended:", "the contended cells compare plain and block mode")
	assert.NotContains(t, out.String(), "max-min shares", "the split is plain and block mode's")
}

func TestRun_RefusesNonPositiveSettings(t *testing.T) {
	for _, args := range [][]string{{"-runs", "0"}, {"-duration", "0s"}, {"-goroutines", "0"}, {"-block", "-1"}} {
		assert.Error(t, run(args, &strings.Builder{}), "%v", args)
	}
	assert.Error(t, run([]string{"-procs", "x"}, &strings.Builder{}))
}

func TestHist_QuantileIsWithinTwoPercent(t *testing.T) {
	h := newHist()
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, q := range []float64{0.5, 0.99, 1} {
		exact := time.Duration(q*1000) * time.Millisecond
		assert.InEpsilon(t, float64(exact), float64(h.quantile(q)), 0.021, "q=%v", q)
	}
	assert.Zero(t, (&hist{Counts: make([]int64, histBuckets)}).quantile(0.5), "an empty histogram")
	assert.Equal(t, 0, bucketOf(0), "under 1µs: the first bucket")
	assert.Equal(t, histBuckets-1, bucketOf(time.Hour), "above the range: the last bucket")
	var sum hist = newHist()
	sum.merge(h)
	sum.merge(h)
	assert.Equal(t, 2*h.total(), sum.total(), "histograms add up")
}
