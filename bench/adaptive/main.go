// Command adaptive compares concurrency limits in front of a backend that
// thrashes: static limits (the best in hindsight per phase among several),
// this module's adaptive algorithms (with FIFO waiting, and with the
// standing-queue policy), and failsafe-go's adaptivelimiter (with its defaults,
// and tuned by a sweep). The backend is processor sharing with a capacity: past
// it every request slows and the total throughput falls (backend.go); its
// capacity and base latency change in phases, and the load with them
// (scenario.go). Each request has a deadline and a shorter budget for waiting
// in the limiter's queue. The arrivals are Poisson, drawn once per run from the
// run's seed and replayed for every strategy; the strategies run one after
// another, each on a fresh backend, one goroutine per request.
//
// Two clocks run the same code:
//
//   - -clock real: the real clock. The limiters pay for their own CPU and for
//     the scheduling of thousands of goroutines, as in production; the numbers
//     move with the machine's load, so three runs give ranges.
//   - -clock sim (the default): simulated time, each strategy in a
//     testing/synctest bubble, where the clock advances only when every
//     goroutine is blocked: the numbers are the model's, free of scheduling
//     noise, and a run takes seconds of CPU instead of minutes of wall time.
//
// Usage:
//
//	go run . -clock real -runs 3 -png chart-realtime.png > RESULTS-realtime.txt  # about 14 minutes
//	go run . -runs 3 -png chart.png > RESULTS.txt                                # simulated, a few seconds
//	go run . -sweep                                                              # failsafe-go's tuning, simulated
//	go run . -quick                                                              # for CI: simulated, short, and a real-time smoke run
//	go run . -clock real -runs 1 -only Vegas                                     # one algorithm against the static limits, about 3 minutes
//	go run . -doors -clock real -runs 1        # the doors scenario over HTTP and at the Limiter (doors.go), about 4 minutes
//	go run . -criticality -clock real -runs 1  # scenario (c), criticality (criticality.go), about 5 minutes
//	go run . -quick -doors -criticality        # for CI: both, simulated and short, and a real-time HTTP smoke run
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	clock       = flag.String("clock", "sim", "sim (simulated time) or real (the real clock)")
	runs        = flag.Int("runs", 3, "runs, each with its own arrivals; the report gives medians and ranges")
	phaseLen    = flag.Duration("phase", 4*time.Second, "length of each phase")
	deadline    = flag.Duration("deadline", time.Second, "each request's deadline, from its arrival")
	queueBudget = flag.Duration("queue", 100*time.Millisecond, "the longest a request waits in the limiter's queue, from its arrival")
	pngPath     = flag.String("png", "", "write the limit and capacity over time of every strategy in the first run to this PNG file")
	only        = flag.String("only", "", "run, besides the static limits (the reference), only the strategies whose name contains one of these comma-separated words")
	quick       = flag.Bool("quick", false, "for CI: one simulated run of phases of 1s, then a real-time run of two strategies with phases of 250ms")
	sweep       = flag.Bool("sweep", false, "sweep failsafe-go's configurations in simulated time and print them by goodput")
)

// main runs as the one test of a test main, because a synctest bubble needs a
// *testing.T.
func main() {
	testing.Main(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "Compare", F: compare}}, nil, nil)
}

func compare(t *testing.T) {
	all := strategies()
	if *only != "" {
		all = slices.DeleteFunc(all, func(s namedStrategy) bool {
			return s.group != "static" && !slices.ContainsFunc(strings.Split(*only, ","), func(w string) bool { return strings.Contains(s.name, w) })
		})
	}
	ld := load{phaseLen: *phaseLen, deadline: *deadline, queueBudget: *queueBudget}
	switch {
	case *doorsRun || *criticalityRun:
		runDoorScenarios(t)
	case *sweep:
		runSweep(t, ld)
	case *quick:
		ld.phaseLen = time.Second
		results := runAll(t, all, ld, 1, false)
		report(os.Stdout, all, results, ld, "simulated")
		if err := checkModel(all, results[0], ld); err != nil {
			t.Fatal(err)
		}
		smoke := slices.DeleteFunc(slices.Clone(all), func(s namedStrategy) bool {
			return s.name != "static 10 +standing" && s.name != algorithms[0].name+" +standing"
		})
		ld.phaseLen = 250 * time.Millisecond
		report(os.Stdout, smoke, runAll(t, smoke, ld, 1, true), ld, "real time")
	default:
		real := *clock == "real"
		if !real && *clock != "sim" {
			t.Fatalf("-clock %q: want sim or real", *clock)
		}
		what := "simulated"
		if real {
			what = "real time"
		}
		results := runAll(t, all, ld, *runs, real)
		report(os.Stdout, all, results, ld, what)
		if *pngPath != "" {
			if err := chart(*pngPath, all, results[0], ld, what); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runAll runs every strategy runs times, on the real clock or each in a
// synctest bubble, and returns the results by run and strategy.
func runAll(t *testing.T, all []namedStrategy, ld load, runs int, real bool) [][]result {
	var results [][]result
	for r := range runs {
		arr := arrivals(uint64(r+1), ld.phaseLen)
		var rs []result
		for _, s := range all {
			began := time.Now()
			if real {
				runtime.GC() // not in the middle of the next strategy's run
				rs = append(rs, runOne(s, arr, ld))
			} else {
				synctest.Test(t, func(*testing.T) { rs = append(rs, runOne(s, arr, ld)) })
			}
			fmt.Fprintf(os.Stderr, "run %d: %s done in %v\n", r+1, s.name, time.Since(began).Round(time.Millisecond))
		}
		results = append(results, rs)
	}
	return results
}
