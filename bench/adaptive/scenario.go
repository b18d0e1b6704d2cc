package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// A phase is a stretch of the run in which the backend and the load hold
// still.
type phase struct {
	capacity int           // requests the backend serves at once at its base latency
	base     time.Duration // a request's service time at or under capacity
	rate     float64       // arrivals per second
}

// throughput is the most the backend serves per second in the phase: its
// capacity kept busy at base latency.
func (p phase) throughput() float64 { return float64(p.capacity) / p.base.Seconds() }

// load is the arrival rate as a fraction of the throughput.
func (p phase) load() float64 { return p.rate / p.throughput() }

// ceiling is the most that can be served per second in the phase:
// min(offered, capacity).
func (p phase) ceiling() float64 { return min(p.rate, p.throughput()) }

// A scenario is one setting of the comparison: a backend, its phases, what
// every request is given, and the contestants. Adding one is one entry of
// scenarios; everything else (runs, report, chart, checks) reads it.
type scenario struct {
	name  string // the -scenario flag's value
	about string // what it tests, one sentence for the report

	server   serverKind
	phases   []phase
	phaseLen time.Duration // each phase's length; -phase overrides it
	quickLen time.Duration // with -quick

	// Every request has a deadline from its arrival for the whole call and a
	// budget, at most as long, for waiting in the limiter's queue; a door's
	// single timeout (httpsem.WithTimeout) gives both the same value.
	deadline, queueBudget time.Duration

	statics    []int          // the static limits tried, each with FIFO waiting and with the standing-queue policy
	initials   []int          // the adaptive strategies' initial limits: each algorithm runs from each
	algorithms []string       // this module's algorithms run, by name (see algorithms)
	peerLimit  int            // x/sync's limit: what a user sizes it to
	tuned      failsafeConfig // failsafe-go's best configuration on this scenario (go run . -sweep -scenario NAME)
	targets    []target       // checked on the medians of the runs, for every adaptive strategy
}

// scenarios are the settings the command runs, by -scenario:
//
//   - a: capacity 40 → 10 → 40, then the base latency doubles, 4s phases,
//     behind a backend that thrashes, each request with a 1s deadline and a
//     100ms queue budget;
//   - b-fifo and b-thrash: capacity 32 → 8 → 32 at 20ms, 10s phases, 600
//     requests per second (0.375x, 1.5x, 0.375x of the capacity), each request
//     with one timeout of 200ms that is both its deadline and its wait budget,
//     behind a FIFO backend (b-fifo) and behind the thrashing one (b-thrash):
//     a long drop in which waiting callers always stand in a long queue.
//   - start: capacity 32 → 8 → 32 at 20ms, 5s phases, each loaded at 1.2x,
//     behind a FIFO backend, the adaptive limits starting from 16 and from
//     200: the start and the return, where the limit must reach the capacity
//     within a second without costing latency on the way.
var scenarios = []scenario{
	{
		name:  "a",
		about: "steps of the capacity and of the base latency under open-loop load, behind a backend that thrashes",
		phases: []phase{
			// Below capacity (0.7x), where a limit that drifts far above what
			// is in flight costs nothing yet.
			{capacity: 40, base: 50 * time.Millisecond, rate: 560},
			// A drop to a quarter under overload (1.3x): a limit above 10
			// thrashes the backend and one below wastes it.
			{capacity: 10, base: 50 * time.Millisecond, rate: 260},
			// The capacity returns (1.1x): the limit must climb back to 40.
			{capacity: 40, base: 50 * time.Millisecond, rate: 880},
			// A slower backend of unchanged capacity (1.1x), where a limit
			// that reads latency as overload loses throughput in proportion.
			{capacity: 40, base: 100 * time.Millisecond, rate: 440},
		},
		server:   thrashing,
		phaseLen: 4 * time.Second, quickLen: time.Second,
		deadline: time.Second, queueBudget: 100 * time.Millisecond,
		statics: []int{10, 20, 40, 60}, initials: []int{20}, peerLimit: 40,
		algorithms: []string{"Capacity", "AIMD", "Vegas", "Gradient2"},
		tuned: failsafeConfig{
			recentMin: 50 * time.Millisecond, recentMax: 30 * time.Second, recentSamples: 10,
			recentQuantile: 0.9, baselineAge: 3, maxLimitFactor: 2,
		},
		targets: stepTargets,
	},
	longDrop("b-fifo", fifo, failsafeConfig{
		recentMin: 250 * time.Millisecond, recentMax: 30 * time.Second, recentSamples: 50,
		recentQuantile: 0.5, baselineAge: 3, maxLimitFactor: 5,
	}),
	longDrop("b-thrash", thrashing, failsafeConfig{
		recentMin: 25 * time.Millisecond, recentMax: 30 * time.Second, recentSamples: 5,
		recentQuantile: 0.9, baselineAge: 10, maxLimitFactor: 2,
	}),
	{
		name:  "start",
		about: "a start from far under and far above the capacity, a drop and a return, under a load past the capacity in every phase, behind a FIFO backend",
		phases: []phase{
			{capacity: 32, base: 20 * time.Millisecond, rate: 1920},
			{capacity: 8, base: 20 * time.Millisecond, rate: 480},
			{capacity: 32, base: 20 * time.Millisecond, rate: 1920},
		},
		server:   fifo,
		phaseLen: 5 * time.Second, quickLen: time.Second,
		deadline: 200 * time.Millisecond, queueBudget: 40 * time.Millisecond,
		statics: []int{8, 16, 32, 64}, initials: []int{16, 200}, peerLimit: 32,
		algorithms: []string{"Capacity"},
		tuned: failsafeConfig{
			recentMin: 25 * time.Millisecond, recentMax: 30 * time.Second, recentSamples: 5,
			recentQuantile: 0.9, baselineAge: 3, maxLimitFactor: 5,
		},
		targets: startTargets,
	},
}

// longDrop is scenario b behind the given backend, with failsafe-go's best
// configuration there.
func longDrop(name string, s serverKind, tuned failsafeConfig) scenario {
	return scenario{
		name:  name,
		about: "a long drop of the capacity to a quarter under a steady load, each request with one timeout as its deadline and its wait budget, behind " + s.String(),
		phases: []phase{
			{capacity: 32, base: 20 * time.Millisecond, rate: 600},
			{capacity: 8, base: 20 * time.Millisecond, rate: 600},
			{capacity: 32, base: 20 * time.Millisecond, rate: 600},
		},
		server:   s,
		phaseLen: 10 * time.Second, quickLen: time.Second,
		deadline: 200 * time.Millisecond, queueBudget: 200 * time.Millisecond,
		statics: []int{8, 16, 32, 64}, initials: []int{16}, peerLimit: 32,
		algorithms: []string{"Capacity"},
		tuned:      tuned,
		targets:    timeoutTargets,
	}
}

// scenarioNamed returns the scenario of that name.
func scenarioNamed(name string) (scenario, error) {
	var names []string
	for _, sc := range scenarios {
		if sc.name == name {
			return sc, nil
		}
		names = append(names, sc.name)
	}
	return scenario{}, fmt.Errorf("-scenario %q: want one of %s", name, strings.Join(names, ", "))
}

// runLen is the length of a whole run.
func (sc scenario) runLen() time.Duration { return sc.phaseLen * time.Duration(len(sc.phases)) }

// phaseAt returns the index of the phase at offset t into the run.
func (sc scenario) phaseAt(t time.Duration) int {
	return min(max(0, int(t/sc.phaseLen)), len(sc.phases)-1)
}

// A request is one arrival of a run.
type request struct {
	at time.Duration // its arrival, from the run's start
}

// arrivals returns the requests of one run: a Poisson process at each phase's
// rate, the same for a given seed, so that every strategy of a run meets the
// same requests.
func (sc scenario) arrivals(seed uint64) []request {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var out []request
	for p, ph := range sc.phases {
		start, end := sc.phaseLen*time.Duration(p), sc.phaseLen*time.Duration(p+1)
		for at := start; ; {
			at += time.Duration(r.ExpFloat64() / ph.rate * float64(time.Second))
			if at >= end {
				break
			}
			out = append(out, request{at: at})
		}
	}
	return out
}
