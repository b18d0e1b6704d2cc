package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// A target is one goal every adaptive strategy of a scenario is held to, on
// the medians of the runs.
type target struct {
	text string // what it asks, for the report
	// misses returns what strategy i misses of it, one line per miss.
	misses func(sc scenario, m medians, i int) []string
}

// medians reads the medians over runs of the strategies' numbers.
type medians struct {
	per   [][]stats // [run][strategy]; the last strategy is the best static per phase
	best  int       // the best static's index
	tuned int       // failsafe-go tuned's index; -1 if it did not run
}

// of is the median over runs of f of strategy i.
func (m medians) of(i int, f func(stats) float64) float64 {
	v := make([]float64, 0, len(m.per))
	for _, run := range m.per {
		v = append(v, f(run[i]))
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// secs is a re-convergence time in seconds: +Inf for never.
func secs(d time.Duration) float64 {
	if d == never {
		return math.Inf(1)
	}
	return d.Seconds()
}

// Targets shared by the scenarios.
var (
	// limitBackWithin: from the start and after each step of the capacity,
	// in a phase loaded past it, the limit is within ±25% of the capacity
	// within 1s and stays there.
	limitBackWithin = target{
		text: "in every phase loaded past the capacity, the limit is within ±25% of it within 1s of the start or the step, and stays there",
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p, ph := range sc.phases {
				if ph.load() < 1 {
					continue
				}
				if b := m.of(i, func(s stats) float64 { return secs(s.limitBack[p]) }); b > 1 {
					miss = append(miss, fmt.Sprintf("phase %d: limit %s", p+1, backText(b)))
				}
			}
			return miss
		},
	}
	// lightLoadPeak: while the load is below the capacity, the limit stays
	// under 1.5x of it, so that a loss of capacity meets a limit near it.
	lightLoadPeak = target{
		text: "while the load is below the capacity the limit stays within 1.5x of it",
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p, ph := range sc.phases {
				if ph.load() >= 1 {
					continue
				}
				if hi := m.of(i, func(s stats) float64 { return s.limitHi[p] }); hi > 1.5*float64(ph.capacity) {
					miss = append(miss, fmt.Sprintf("phase %d: limit up to %.0f, %.1fx the capacity, under load %.2gx", p+1, hi, hi/float64(ph.capacity), ph.load()))
				}
			}
			return miss
		},
	}
)

// p99Within holds the p99 of served requests in every phase to at most
// factor times the best static's.
func p99Within(factor float64) target {
	return target{
		text: fmt.Sprintf("p99 <= %.1fx the best static's in every phase", factor),
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p := range sc.phases {
				mine := m.of(i, func(s stats) float64 { return float64(s.p99[p]) })
				if r := mine / m.of(m.best, func(s stats) float64 { return float64(s.p99[p]) }); r > factor {
					miss = append(miss, fmt.Sprintf("phase %d: p99 %.1fx the best static's", p+1, r))
				}
			}
			return miss
		},
	}
}

// stepTargets are scenario a's.
var stepTargets = []target{
	limitBackWithin,
	{
		text: "a change of base latency alone cuts the median limit by at most 25%",
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p := 1; p < len(sc.phases); p++ {
				if sc.phases[p].capacity != sc.phases[p-1].capacity {
					continue
				}
				if r := m.of(i, func(s stats) float64 { return s.limit[p] / s.limit[p-1] }); r < 0.75 {
					miss = append(miss, fmt.Sprintf("phase %d: median limit cut to %.2fx the previous phase's", p+1, r))
				}
			}
			return miss
		},
	},
	lightLoadPeak,
	{
		text: "goodput >= 0.95 of the best static limit in every phase and >= failsafe-go tuned's over the run",
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p := range sc.phases {
				if r := m.of(i, func(s stats) float64 { return s.ratio[p] }); r < 0.95 {
					miss = append(miss, fmt.Sprintf("phase %d: goodput %.2f of the best static's", p+1, r))
				}
			}
			if m.tuned >= 0 {
				o, t := m.of(i, func(s stats) float64 { return s.overall }), m.of(m.tuned, func(s stats) float64 { return s.overall })
				if o < t {
					miss = append(miss, fmt.Sprintf("goodput over the run %.0f/s < failsafe-go tuned's %.0f/s", o, t))
				}
			}
			return miss
		},
	},
	p99Within(1.1),
}

// timeoutTargets are scenario b's: never serve a caller too late, tell the
// refused at once, and keep the limit on the capacity.
var timeoutTargets = []target{
	{
		text: "goodput >= 0.9 of min(offered, capacity) in every phase",
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p := range sc.phases {
				if r := m.of(i, func(s stats) float64 { return s.ofCeiling[p] }); r < 0.9 {
					miss = append(miss, fmt.Sprintf("phase %d: goodput %.2f of min(offered, capacity)", p+1, r))
				}
			}
			return miss
		},
	},
	{
		text: "at most 1% of the requests answered after their deadline in every phase",
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p := range sc.phases {
				if r := m.of(i, func(s stats) float64 { return lateShare(s.ends[p]) }); r > 0.01 {
					miss = append(miss, fmt.Sprintf("phase %d: %.1f%% late", p+1, 100*r))
				}
			}
			return miss
		},
	},
	{
		text: fmt.Sprintf(">= 90%% of the callers not served refused at once (within %v) in every phase", atOnce),
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p := range sc.phases {
				r := m.of(i, func(s stats) float64 { return toldAtOnce(s.ends[p]) })
				if !math.IsNaN(r) && r < 0.9 {
					miss = append(miss, fmt.Sprintf("phase %d: %.0f%% told at once", p+1, 100*r))
				}
			}
			return miss
		},
	},
	limitBackWithin,
	lightLoadPeak,
	p99Within(1.2),
}

// startTargets are scenario start's.
var startTargets = []target{
	limitBackWithin,
	{
		text: "goodput >= 0.95 of the best static limit in every phase",
		misses: func(sc scenario, m medians, i int) []string {
			var miss []string
			for p := range sc.phases {
				if r := m.of(i, func(s stats) float64 { return s.ratio[p] }); r < 0.95 {
					miss = append(miss, fmt.Sprintf("phase %d: goodput %.2f of the best static's", p+1, r))
				}
			}
			return miss
		},
	},
	p99Within(1.2),
}

// printTargets prints, for each adaptive strategy, the targets it misses.
func printTargets(w io.Writer, sc scenario, all []namedStrategy, per [][]stats) {
	m := medians{per: per, best: len(all), tuned: slices.IndexFunc(all, func(s namedStrategy) bool { return s.name == "failsafe-go tuned" })}
	var texts []string
	for _, t := range sc.targets {
		texts = append(texts, t.text)
	}
	fmt.Fprintf(w, "\n### Targets\n\nOn the medians: %s.\n\n", strings.Join(texts, "; "))
	for i, s := range all {
		if s.group != "adaptive" {
			continue
		}
		var miss []string
		for _, t := range sc.targets {
			miss = append(miss, t.misses(sc, m, i)...)
		}
		if len(miss) == 0 {
			fmt.Fprintf(w, "- %s: every target met\n", s.name)
		} else {
			fmt.Fprintf(w, "- %s: missed: %s\n", s.name, strings.Join(miss, "; "))
		}
	}
}

// backText tells when the limit came back, in seconds; +Inf for never.
func backText(secs float64) string {
	if math.IsInf(secs, 1) {
		return "never back within the band"
	}
	return fmt.Sprintf("back after %.1fs", secs)
}

// checkModel returns an error unless a simulated run shows the backend's
// physics: in every phase the best static limit serves at least 90% of what
// the backend or the load allows, and, behind the backend that thrashes, in a
// phase of overload the static limit furthest above the capacity serves less
// than the one at it.
func checkModel(sc scenario, all []namedStrategy, rs []result) error {
	st, _ := measure(sc, all, rs)
	for p, ph := range sc.phases {
		best, atCap, above, aboveLimit := 0.0, -1.0, -1.0, 0
		for i, s := range all {
			if s.group != "static" {
				continue
			}
			g := st[i].goodput[p]
			best = max(best, g)
			n := rs[i].limits[0]
			if n == ph.capacity {
				atCap = max(atCap, g)
			}
			if n > aboveLimit {
				above, aboveLimit = g, n
			}
		}
		if want := 0.9 * ph.ceiling(); best < want {
			return fmt.Errorf("scenario %s, phase %d: the best static limit serves %.0f/s, under 90%% of the %.0f/s the phase allows", sc.name, p+1, best, want/0.9)
		}
		if sc.server == thrashing && ph.load() > 1 && atCap >= 0 && aboveLimit > ph.capacity && above >= atCap {
			return fmt.Errorf("scenario %s, phase %d: a static limit of %d serves %.0f/s, no less than %.0f/s at the capacity of %d: the backend does not thrash",
				sc.name, p+1, aboveLimit, above, atCap, ph.capacity)
		}
	}
	return nil
}
