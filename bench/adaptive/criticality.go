package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/priority"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// Scenario (c), criticality: three levels offered together at 1.2 times the
// backend's capacity (critical 0.2 of it, default 0.4, sheddable 0.6), then
// the capacity drops to a quarter, where critical alone is 0.8 of it, and
// returns. Each request has one budget, its deadline and longest wait. The
// backend thrashes past its capacity (backend.go), so a limit far above it
// costs every level. The reference for the critical level is what it gets
// alone, behind the same limiter; for the total, the best static limit of
// each phase.
var criticalityRun = flag.Bool("criticality", false, "run scenario (c), criticality: three levels at 1.2x the capacity, which drops to a quarter and returns, behind the Limiter and failsafe-go's PriorityLimiter (-clock sim or real)")

// The setting: a thrashing backend of critCaps in turn at critBase a request;
// the levels' arrival rates are fixed shares of the first capacity.
var (
	critCaps   = []int{32, 8, 32}
	critShares = []float64{0.2, 0.4, 0.6} // critical, default, sheddable
	critLevels = []adaptive.Priority{adaptive.Critical, adaptive.Default, adaptive.Sheddable}
)

const (
	critBase   = 20 * time.Millisecond
	critBudget = 200 * time.Millisecond
)

// failsafeLevels are failsafe-go's priorities for the three levels.
var failsafeLevels = []priority.Priority{priority.High, priority.Medium, priority.Low}

// A critStrategy makes a fresh door in front of a backend's call.
type critStrategy struct {
	name   string
	family string // the limiter, shared by its run with all levels and its run of the critical level alone
	alone  bool   // offered the critical level only
	static bool   // a static limit: a reference for the total
	make   func(call func(context.Context) error) openDoor
}

func critStrategies() []critStrategy {
	ours := func(call func(context.Context) error) openDoor {
		return &priorityDoor{l: adaptive.New(semaphore.New(int64(critCaps[0])), nil), call: call}
	}
	// The static limits run behind the same door as the Limiter, the
	// deadline rule included, without priorities: a FIFO semaphore that
	// waits out the budget serves almost nothing in time here, which would
	// make a poor reference.
	var s []critStrategy
	for _, n := range []int{8, 12, 16, 24, 32} {
		s = append(s, critStrategy{name: "static " + strconv.Itoa(n), static: true,
			make: func(call func(context.Context) error) openDoor {
				return &limiterDoor{l: adaptive.New(semaphore.New(int64(n)), fixed(n)), call: call}
			}})
	}
	return append(s,
		critStrategy{name: "Limiter (default), no priorities", make: func(call func(context.Context) error) openDoor {
			return &limiterDoor{l: adaptive.New(semaphore.New(int64(critCaps[0])), nil), call: call}
		}},
		critStrategy{name: "Limiter (default), priorities", family: "ours", make: ours},
		critStrategy{name: "Limiter (default), critical alone", family: "ours", alone: true, make: ours},
		critStrategy{name: "failsafe-go PriorityLimiter", family: "failsafe", make: newFailsafePriority},
		critStrategy{name: "failsafe-go PriorityLimiter, critical alone", family: "failsafe", alone: true, make: newFailsafePriority},
	)
}

// priorityDoor admits through an adaptive Limiter, each request at its
// level's Priority.
type priorityDoor struct {
	l    *adaptive.Limiter
	call func(context.Context) error
}

func (d *priorityDoor) do(ctx context.Context, class int, arrival time.Time, budget time.Duration) openEnding {
	c, err := d.l.Acquire(adaptive.ContextWithPriority(ctx, critLevels[class]))
	if err != nil {
		return refusalEnding(time.Since(arrival), budget)
	}
	err = d.call(ctx)
	c.Done(adaptive.Classify(err))
	if err != nil {
		return openLate
	}
	return openServed
}

func (d *priorityDoor) limit() int { return d.l.Limit() }

// failsafePriority is failsafe-go's PriorityLimiter: its adaptive limiter
// with the tuning of scenario (a) (scenario a's tuned configuration), queueing with its default
// rejection factors, and a prioritizer calibrated every 100ms; a request
// waits for a permit as long as its budget allows.
type failsafePriority struct {
	l    adaptivelimiter.PriorityLimiter[any]
	stop context.CancelFunc
	call func(context.Context) error
}

func newFailsafePriority(call func(context.Context) error) openDoor {
	c := scenarios[0].tuned
	p := adaptivelimiter.NewPrioritizer()
	l := adaptivelimiter.NewBuilder[any]().
		WithLimits(1, 200, uint(critCaps[0])).
		WithRecentWindow(c.recentMin, c.recentMax, c.recentSamples).
		WithRecentQuantile(c.recentQuantile).
		WithBaselineWindow(c.baselineAge).
		WithMaxLimitFactor(c.maxLimitFactor).
		BuildPrioritized(p)
	return &failsafePriority{l: l, stop: p.ScheduleCalibrations(context.Background(), 100*time.Millisecond), call: call}
}

func (d *failsafePriority) do(ctx context.Context, class int, arrival time.Time, budget time.Duration) openEnding {
	p, err := d.l.AcquirePermitWithPriority(ctx, failsafeLevels[class])
	if err != nil {
		return refusalEnding(time.Since(arrival), budget)
	}
	if err := d.call(ctx); err != nil {
		p.Drop()
		return openLate
	}
	p.Record()
	return openServed
}

func (d *failsafePriority) limit() int { return d.l.Limit() }

func (d *failsafePriority) close() { d.stop() }

// runCriticality runs scenario (c): every strategy, runs times, on the clock
// asked for, and prints the report.
func runCriticality(t *testing.T, real bool, runs int, phaseLen time.Duration, only func(string) bool) {
	throughput := float64(critCaps[0]) / critBase.Seconds()
	rates := make([][]float64, len(critCaps))
	alone := make([][]float64, len(critCaps))
	for p := range critCaps {
		for c, share := range critShares {
			rates[p] = append(rates[p], share*throughput)
			alone[p] = append(alone[p], map[bool]float64{true: share * throughput}[c == 0])
		}
	}
	var strategies []critStrategy
	var results [][]openResult // [strategy][run]
	for _, s := range critStrategies() {
		if !only(s.name) && !s.static && !s.alone {
			continue
		}
		var rs []openResult
		for r := range runs {
			rt := rates
			if s.alone {
				rt = alone
			}
			arr := poissonArrivals(uint64(r+1), phaseLen, rt)
			began := time.Now()
			run := func() {
				b := newBackend(phase{capacity: critCaps[0], base: critBase})
				door := s.make(b.call)
				if c, ok := door.(interface{ close() }); ok {
					defer c.close()
				}
				rs = append(rs, runOpenLoop(door, arr, len(critCaps), len(critShares), phaseLen, critBudget,
					func(p int) { b.setPhase(phase{capacity: critCaps[p], base: critBase}) }))
				b.stop()
			}
			if real {
				run()
			} else {
				synctest.Test(t, func(*testing.T) { run() })
			}
			fmt.Fprintf(os.Stderr, "criticality run %d: %s done in %v\n", r+1, s.name, time.Since(began).Round(time.Millisecond))
		}
		strategies, results = append(strategies, s), append(results, rs)
	}
	clock := "simulated"
	if real {
		clock = "real time"
	}
	reportCriticality(os.Stdout, strategies, results, phaseLen, clock)
}

// reportCriticality prints scenario (c)'s numbers per phase: medians over the
// runs, with their ranges; each limiter's critical level against the same
// limiter's critical-alone run, its total against the best static limit of
// the phase.
func reportCriticality(w io.Writer, all []critStrategy, results [][]openResult, phaseLen time.Duration, clock string) {
	fmt.Fprintf(w, "## Criticality: three levels at 1.2x the capacity, which drops to a quarter and returns\n\n")
	fmt.Fprintf(w, "Clock: %s. %d run(s). Backend: processor sharing that thrashes past its capacity C (backend.go), %v a request at or under it, C = %v in phases of %v. Offered, Poisson: critical %.0f/s, default %.0f/s, sheddable %.0f/s (0.2, 0.4, 0.6 of the first capacity); each request has a budget of %v, its deadline and its longest wait.\n",
		clock, len(results[0]), critBase, critCaps, phaseLen,
		critShares[0]*float64(critCaps[0])/critBase.Seconds(), critShares[1]*float64(critCaps[0])/critBase.Seconds(),
		critShares[2]*float64(critCaps[0])/critBase.Seconds(), critBudget)
	fmt.Fprintf(w, "Goodput: served within the budget, per second, by phase of arrival. Critical ÷ alone: the level's goodput over what it gets offered alone behind the same limiter; p99 bound: 1.2x alone's p99 plus one base latency. Refused: refused or unanswered, by level.\n")
	med := func(i int, f func(openResult) float64) float64 {
		var v []float64
		for _, r := range results[i] {
			v = append(v, f(r))
		}
		return medianOf(v)
	}
	col := func(i int, f func(openResult) float64, format string) string {
		var v []float64
		for _, r := range results[i] {
			v = append(v, f(r))
		}
		return medianCell(v, format)
	}
	aloneOf := func(family string) int {
		for i, s := range all {
			if s.alone && family != "" && s.family == family {
				return i
			}
		}
		return -1
	}
	for p, c := range critCaps {
		fmt.Fprintf(w, "\n### Phase %d: capacity %d (%.0f/s)\n\n", p+1, c, float64(c)/critBase.Seconds())
		best := 0.0
		for i, s := range all {
			if s.static {
				best = max(best, med(i, func(r openResult) float64 { return float64(r.stats(p, 0, 1, 2).served) / phaseLen.Seconds() }))
			}
		}
		var rows [][]string
		for i, s := range all {
			total := func(r openResult) float64 { return float64(r.stats(p, 0, 1, 2).served) / phaseLen.Seconds() }
			crit := func(r openResult) float64 { return float64(r.stats(p, 0).served) / phaseLen.Seconds() }
			row := []string{s.name, col(i, total, "%.0f"), col(i, func(r openResult) float64 { return total(r) / best }, "%.2f"),
				col(i, crit, "%.0f"), "", col(i, func(r openResult) float64 { return msOf(r.stats(p, 0).p99) }, "%.0f"), ""}
			if a := aloneOf(s.family); a >= 0 && !s.alone {
				aloneGood := med(a, crit)
				aloneP99 := med(a, func(r openResult) float64 { return msOf(r.stats(p, 0).p99) })
				row[4] = fmt.Sprintf("%.3f", med(i, crit)/aloneGood)
				row[6] = fmt.Sprintf("%.0f", 1.2*aloneP99+msOf(critBase))
			}
			for cl := 1; cl < len(critShares); cl++ {
				row = append(row, col(i, func(r openResult) float64 { return float64(r.stats(p, cl).served) / phaseLen.Seconds() }, "%.0f"))
			}
			for cl := range critShares {
				row = append(row, col(i, func(r openResult) float64 { s := r.stats(p, cl); return float64(s.atOnce + s.toldLate + s.unanswered) }, "%.0f"))
			}
			row = append(row, col(i, func(r openResult) float64 { return float64(r.stats(p, 0, 1, 2).late) }, "%.0f"),
				col(i, func(r openResult) float64 { return float64(r.stats(p, 0).limit) }, "%.0f"))
			rows = append(rows, row)
		}
		table(w, []string{"limiter", "goodput/s", "÷ best static", "critical/s", "critical ÷ alone", "critical p99 ms", "p99 bound ms",
			"default/s", "sheddable/s", "refused critical", "refused default", "refused sheddable", "late", "limit"}, rows)
	}
}

func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
