// Command adaptive compares concurrency limits in front of a backend whose
// capacity changes: static limits (the best in hindsight per phase among
// several), this module's adaptive algorithms (with FIFO waiting, and with the
// standing-queue policy), failsafe-go's adaptivelimiter (with its defaults,
// and tuned by a sweep) and x/sync's semaphore. Each scenario (scenario.go)
// gives a backend, its phases of capacity, base latency and load, and what
// each request is given: a deadline and a budget for waiting in the limiter's
// queue. The backends are processor sharing whose throughput falls past its
// capacity (backend.go) and capacity slots behind a FIFO queue (fifo.go). The
// arrivals are Poisson, drawn once per run from the run's seed and replayed
// for every strategy; the strategies run one after another, each on a fresh
// backend, one goroutine per request.
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
// Usage (the RESULTS files and charts committed here come from these commands;
// the real-time ones ran at the same time, under one measurement):
//
//	go run . -scenario b-fifo -runs 3 -png chart-sim-b-fifo.png > RESULTS-sim-b-fifo.txt   # simulated, every contestant, seconds
//	go run . -scenario b-fifo -clock real -runs 3 -statics 8 -only Capacity,failsafe,x/sync -png chart-realtime-b-fifo.png > RESULTS-realtime-b-fifo.txt  # about 11 minutes
//	go run . -scenario b-thrash -clock real -runs 3 -statics 8 -only Capacity,failsafe,x/sync -png chart-realtime-b-thrash.png > RESULTS-realtime-b-thrash.txt
//	go run . -scenario a -clock real -runs 3 -statics 10,40 -only Capacity,failsafe,x/sync -png chart-realtime-a.png > RESULTS-realtime-a.txt  # about 7 minutes
//	go run . -scenario start -clock real -runs 3 -statics 8,32 -only Capacity,failsafe,x/sync -png chart-realtime-start.png > RESULTS-realtime-start.txt  # about 8 minutes
//	go run . -criticality -clock real -runs 3 -only "static 8,static 32,Limiter,failsafe" > RESULTS-realtime-criticality.txt  # scenario (c) (criticality.go); its static limits always run: about 15 minutes
//	go run . -doors -clock real -runs 3 -only "Limiter (default),WithoutDeadlineShedding,HTTP" > RESULTS-realtime-doors.txt  # over HTTP and at the Limiter (doors.go), about 9 minutes
//	go run . -criticality -runs 3 > RESULTS-sim-criticality.txt  # and -doors, and -scenario a, b-thrash, start: simulated
//	go run . -scenario b-fifo -queue 20ms                       # with a wait budget shorter than the deadline
//	go run . -sweep -scenario b-fifo                            # failsafe-go's tuning, simulated
//	go run . -quick                                             # for CI: every scenario simulated and short, and a real-time smoke run
//	go run . -quick -doors -criticality                         # for CI: both, simulated and short, and a real-time HTTP smoke run
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	scenarioName = flag.String("scenario", "a", "the scenario: a, b-fifo, b-thrash or start (see scenario.go)")
	clock        = flag.String("clock", "sim", "sim (simulated time) or real (the real clock)")
	runs         = flag.Int("runs", 3, "runs, each with its own arrivals; the report gives medians and ranges")
	phaseLen     = flag.Duration("phase", 0, "length of each phase; 0 for the scenario's")
	deadline     = flag.Duration("deadline", 0, "each request's deadline, from its arrival; 0 for the scenario's")
	queueBudget  = flag.Duration("queue", 0, "the longest a request waits in the limiter's queue, from its arrival; 0 for the scenario's")
	pngPath      = flag.String("png", "", "write the limit and capacity over time of every strategy in the first run to this PNG file")
	only         = flag.String("only", "", "run, besides the static limits (the reference), only the strategies whose name contains one of these comma-separated words")
	quick        = flag.Bool("quick", false, "for CI: one simulated run of every scenario with short phases, then a real-time run of two strategies of scenario a with phases of 250ms")
	sweep        = flag.Bool("sweep", false, "sweep failsafe-go's configurations in simulated time and print them by goodput")
	staticsFlag  = flag.String("statics", "", "the static limits run, comma-separated (each with FIFO waiting and with the standing-queue policy); empty for the scenario's")
)

// main runs as the one test of a test main, because a synctest bubble needs a
// *testing.T.
func main() {
	testing.Main(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "Compare", F: compare}}, nil, nil)
}

func compare(t *testing.T) {
	sc, err := scenarioNamed(*scenarioName)
	if err != nil {
		t.Fatal(err)
	}
	sc = withFlags(sc)
	switch {
	case *doorsRun || *criticalityRun:
		runDoorScenarios(t)
	case *sweep:
		runSweep(t, sc)
	case *quick:
		for _, sc := range scenarios {
			sc = withFlags(sc)
			sc.phaseLen = sc.quickLen
			all := selected(sc)
			results := runAll(t, sc, all, 1, false)
			report(os.Stdout, sc, all, results, "simulated")
			if err := checkModel(sc, all, results[0]); err != nil {
				t.Fatal(err)
			}
		}
		a, _ := scenarioNamed("a")
		smoke := slices.DeleteFunc(a.strategies(), func(s namedStrategy) bool {
			return s.name != "static 10 +standing" && s.name != algorithms[0].name+" +standing"
		})
		a.phaseLen = 250 * time.Millisecond
		report(os.Stdout, a, smoke, runAll(t, a, smoke, 1, true), "real time")
	default:
		real := *clock == "real"
		if !real && *clock != "sim" {
			t.Fatalf("-clock %q: want sim or real", *clock)
		}
		what := "simulated"
		if real {
			what = "real time"
		}
		all := selected(sc)
		results := runAll(t, sc, all, *runs, real)
		report(os.Stdout, sc, all, results, what)
		if *pngPath != "" {
			if err := chart(*pngPath, sc, all, results[0], what); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// withFlags is sc with the durations the flags set.
func withFlags(sc scenario) scenario {
	if *phaseLen > 0 {
		sc.phaseLen, sc.quickLen = *phaseLen, *phaseLen
	}
	if *deadline > 0 {
		sc.deadline = *deadline
	}
	if *queueBudget > 0 {
		sc.queueBudget = *queueBudget
	}
	sc.queueBudget = min(sc.queueBudget, sc.deadline)
	if *staticsFlag != "" {
		sc.statics = nil
		for _, f := range strings.Split(*staticsFlag, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				panic(fmt.Sprintf("-statics %q: want positive integers separated by commas", *staticsFlag))
			}
			sc.statics = append(sc.statics, n)
		}
	}
	return sc
}

// selected is sc's strategies that -only keeps: the static limits, and those
// whose name contains one of its words.
func selected(sc scenario) []namedStrategy {
	all := sc.strategies()
	if *only == "" {
		return all
	}
	return slices.DeleteFunc(all, func(s namedStrategy) bool {
		return s.group != "static" && !slices.ContainsFunc(strings.Split(*only, ","), func(w string) bool { return strings.Contains(s.name, w) })
	})
}

// runAll runs every strategy runs times, on the real clock or each in a
// synctest bubble, and returns the results by run and strategy.
func runAll(t *testing.T, sc scenario, all []namedStrategy, runs int, real bool) [][]result {
	var results [][]result
	for r := range runs {
		arr := sc.arrivals(uint64(r + 1))
		var rs []result
		for _, s := range all {
			began := time.Now()
			if real {
				runtime.GC() // not in the middle of the next strategy's run
				rs = append(rs, runOne(sc, s, arr))
			} else {
				synctest.Test(t, func(*testing.T) { rs = append(rs, runOne(sc, s, arr)) })
			}
			fmt.Fprintf(os.Stderr, "%s, run %d: %s done in %v\n", sc.name, r+1, s.name, time.Since(began).Round(time.Millisecond))
		}
		results = append(results, rs)
	}
	return results
}
