package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// span is a median and a range over runs.
type span struct{ med, lo, hi float64 }

func spanOf(xs []float64) span {
	s := slices.Clone(xs)
	slices.Sort(s)
	return span{s[len(s)/2], s[0], s[len(s)-1]}
}

func (s span) format(f func(float64) string) string {
	if s.lo == s.hi {
		return f(s.med)
	}
	return f(s.med) + " [" + f(s.lo) + "–" + f(s.hi) + "]"
}

func count(x float64) string {
	if x < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3g", x)
}
func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
func ms(x float64) string  { return fmt.Sprintf("%.1fms", x) }
func num(x float64) string { return fmt.Sprintf("%.3g", x) }

// report prints one table per scenario, medians and ranges over the runs, and
// what the fair limit's targets came to. It returns true if any limiter
// exceeded the limit.
func report(w io.Writer, all [][]outcome) (exceeded bool) {
	n := len(all[0])
	for i := 0; i < n; i++ {
		first := all[0][i]
		if i == 0 || all[0][i-1].scenario != first.scenario {
			fmt.Fprintf(w, "\n## %s\n\n", first.scenario)
		}
		var runs []outcome
		for _, rs := range all {
			runs = append(runs, rs[i])
		}
		fmt.Fprintf(w, "%s: max in service %s of %d", first.limiter,
			spanOf(collect(runs, func(o outcome) float64 { return float64(o.maxInService) })).format(num), first.limit)
		for _, o := range runs {
			if o.violations > 0 {
				exceeded = true
				fmt.Fprintf(w, " (EXCEEDED %d times)", o.violations)
			}
		}
		if first.scenario == "return" {
			fmt.Fprintf(w, "; while the owner was idle, %s units in service",
				spanOf(collect(runs, func(o outcome) float64 { return o.idleUse })).format(num))
		}
		fmt.Fprintln(w)
		if _, _, j := first.shares(); j == j && len(first.tenants) > 1 { // not NaN: backlogged tenants
			fmt.Fprintf(w, "  Jain's index over weighted shares: %s\n",
				spanOf(collect(runs, func(o outcome) float64 { _, _, j := o.shares(); return j })).format(num))
		}
		for k, t := range first.tenants {
			var b strings.Builder
			fmt.Fprintf(&b, "  %-6s w%d", t.name, t.weight)
			if t.backlog {
				_, fair, _ := first.shares()
				idx := backlogIndex(first, k)
				fmt.Fprintf(&b, "  share %s (fair %s)", spanOf(collect(runs, func(o outcome) float64 {
					got, _, _ := o.shares()
					return got[idx]
				})).format(pct), pct(fair[idx]))
			}
			fmt.Fprintf(&b, "  p99 wait %s, latency %s; served %s, failed %s",
				spanOf(collect(runs, func(o outcome) float64 { return msOf(p99(o.tenants[k].waits)) })).format(ms),
				spanOf(collect(runs, func(o outcome) float64 { return msOf(p99(o.tenants[k].waits) + *service) })).format(ms),
				spanOf(collect(runs, func(o outcome) float64 { return float64(o.tenants[k].served) })).format(num),
				spanOf(collect(runs, func(o outcome) float64 { return float64(o.tenants[k].failed) })).format(num))
			if t.guarantee > 0 {
				fmt.Fprintf(&b, "; guarantee %d back after %s units released (bound %d)", t.guarantee,
					spanOf(collect(runs, func(o outcome) float64 {
						r := o.tenants[k]
						if r.returnGot < 0 {
							return -1 // not measured: the limiter does not count units per tenant, or never
						}
						return float64(r.returnGot - r.returnAt)
					})).format(count), t.guarantee)
			}
			if first.overTime() {
				fmt.Fprintf(&b, "\n         over time: ")
				if t.backlog {
					fmt.Fprintf(&b, "held %s of the units in service (fair %s), ", spanOf(collect(runs, func(o outcome) float64 {
						got, _ := o.timeShares()
						return got[backlogIndex(o, k)]
					})).format(pct), pct(fairOf(first, k)))
				}
				fmt.Fprintf(&b, "p99 latency %s", spanOf(collect(runs, func(o outcome) float64 {
					return msOf(p99(o.tenants[k].latencies))
				})).format(ms))
			}
			fmt.Fprintln(w, b.String())
		}
		if first.overTime() {
			if got, _ := first.timeShares(); len(got) > 1 {
				fmt.Fprintf(w, "  time shares off their fair shares by at most %s (goal 5%%)\n",
					spanOf(collect(runs, func(o outcome) float64 { _, gap := o.timeShares(); return gap })).format(pct))
			}
			if i > 0 && strings.HasSuffix(first.limiter, ", alone") {
				var ratios []float64 // each run's: beside the others (the outcome before) over alone
				for _, rs := range all {
					ratios = append(ratios, latencyRatio(rs[i-1], rs[i]))
				}
				fmt.Fprintf(w, "  %s's p99 latency beside the others over alone: %s (goal 1.2x)\n", first.tenants[0].name,
					spanOf(ratios).format(times))
			}
		}
	}
	return exceeded
}

func times(x float64) string { return fmt.Sprintf("%.2fx", x) }

// overTime reports whether the scenario's requests vary in size or service
// time: its report gives the units held over time and the latencies.
func (o outcome) overTime() bool { return strings.HasPrefix(o.scenario, "mixed") }

// timeShares returns each backlogged tenant's share of the units held over
// time by the backlogged tenants, and the largest gap between such a share and
// its weighted fair share, relative to the fair share (NaN without backlogged
// tenants).
func (o outcome) timeShares() (got []float64, gap float64) {
	var total time.Duration
	var weights int64
	for _, t := range o.tenants {
		if t.backlog {
			total += t.unitTime
			weights += t.weight
		}
	}
	gap = math.NaN()
	for _, t := range o.tenants {
		if !t.backlog {
			continue
		}
		g, f := float64(t.unitTime)/float64(total), float64(t.weight)/float64(weights)
		got = append(got, g)
		if d := math.Abs(g-f) / f; gap != gap || d > gap {
			gap = d
		}
	}
	return got, gap
}

// fairOf is tenant k's weighted share among the backlogged tenants.
func fairOf(o outcome, k int) float64 {
	var weights int64
	for _, t := range o.tenants {
		if t.backlog {
			weights += t.weight
		}
	}
	return float64(o.tenants[k].weight) / float64(weights)
}

// latencyRatio is the p99 latency of alone's one tenant beside the others, in
// with, over its p99 latency alone.
func latencyRatio(with, alone outcome) float64 {
	name := alone.tenants[0].name
	for _, t := range with.tenants {
		if t.name == name {
			return float64(p99(t.latencies)) / float64(p99(alone.tenants[0].latencies))
		}
	}
	return math.NaN()
}

func backlogIndex(o outcome, k int) int {
	idx := -1
	for i := 0; i <= k; i++ {
		if o.tenants[i].backlog {
			idx++
		}
	}
	return idx
}

func collect(runs []outcome, f func(outcome) float64) []float64 {
	var xs []float64
	for _, o := range runs {
		xs = append(xs, f(o))
	}
	return xs
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
