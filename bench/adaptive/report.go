package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Re-convergence after a step, as the report defines it.
const (
	limitBand   = 0.25        // the limit is back once within ±25% of the new capacity, and stays there to the phase's end
	goodputBand = 0.05        // goodput is back once within 5% of the phase's best static limit, and stays there
	goodputSpan = time.Second // over every window of this length (at most half a phase) from then to the phase's end
)

// never is a re-convergence time that did not happen within the phase.
const never = time.Duration(math.MaxInt64)

// loadBound is the limit's re-convergence time in a phase whose load is below
// the capacity: there the load, not the limit, bounds what is in flight, and
// the limit need not be at the capacity.
const loadBound = time.Duration(-1)

// stats is one strategy's numbers in one run.
type stats struct {
	goodput, ratio, ofCeiling []float64       // per phase: served per second; its ratio to the phase's best static; to min(offered, capacity)
	p50, p99                  []time.Duration // per phase, of served requests, from arrival
	limit                     []float64       // per phase: the median of the limit's samples
	limitLo, limitHi          []float64       // per phase: the least and most of them
	limitBack, goodBack       []time.Duration // per phase: time from the step into it (the start, for the first) until the limit, the goodput, is back; never
	ends                      [][endings]int  // per phase

	overall, overallRatio, singleRatio float64       // goodput over the run; its ratio to the per-phase best static's, to the best single static's
	allP50, allP99                     time.Duration // over the run
	lag                                time.Duration // p99 of how late the callers started: the machine's scheduling noise
	allEnds                            [endings]int
}

// toldAtOnce is the share of the callers not served that were refused at
// once (within atOnce), rather than after waiting, after their budget, or
// with an answer past their deadline; NaN if every caller was served.
func toldAtOnce(e [endings]int) float64 {
	notServed := 0
	for k := range endings {
		if k != served {
			notServed += e[k]
		}
	}
	if notServed == 0 {
		return math.NaN()
	}
	return float64(e[refused]) / float64(notServed)
}

// lateShare is the share of the callers whose answer came past their
// deadline.
func lateShare(e [endings]int) float64 {
	n := 0
	for _, v := range e {
		n += v
	}
	if n == 0 {
		return 0
	}
	return float64(e[late]) / float64(n)
}

// measure computes the numbers of every strategy in one run and appends those
// of the best static limit per phase (the static with the most goodput in
// each phase), whose name is given per phase.
func measure(sc scenario, all []namedStrategy, rs []result) ([]stats, []string) {
	bpp := int(sc.phaseLen / bucket)
	out := make([]stats, len(rs)+1)
	for i, r := range rs {
		s := &out[i]
		var lat []time.Duration
		for p, ph := range sc.phases {
			s.goodput = append(s.goodput, float64(r.ends[p][served])/sc.phaseLen.Seconds())
			s.ofCeiling = append(s.ofCeiling, s.goodput[p]/ph.ceiling())
			s.p50 = append(s.p50, quantile(r.latency[p], 0.5))
			s.p99 = append(s.p99, quantile(r.latency[p], 0.99))
			l := slices.Clone(r.limits[p*bpp : (p+1)*bpp])
			slices.Sort(l)
			s.limit = append(s.limit, float64(l[len(l)/2]))
			s.limitLo, s.limitHi = append(s.limitLo, float64(l[0])), append(s.limitHi, float64(l[len(l)-1]))
			s.limitBack = append(s.limitBack, limitBack(sc, r.limits, p, bpp))
			s.ends = append(s.ends, r.ends[p])
			for e := range endings {
				s.allEnds[e] += r.ends[p][e]
			}
			lat = append(lat, r.latency[p]...)
		}
		s.overall = float64(s.allEnds[served]) / sc.runLen().Seconds()
		s.allP50, s.allP99 = quantile(lat, 0.5), quantile(lat, 0.99)
		s.lag = quantile(r.lag, 0.99)
	}

	best := &out[len(rs)]
	names := make([]string, len(sc.phases))
	bestOf := make([]int, len(sc.phases))
	var lat []time.Duration
	single := 0.0
	for p := range sc.phases {
		bi := -1
		for i, ns := range all {
			if ns.group == "static" && (bi < 0 || out[i].goodput[p] > out[bi].goodput[p]) {
				bi = i
			}
		}
		if bi < 0 { // no static limit ran: no reference
			out = out[:len(rs)]
			for i := range out {
				for range sc.phases {
					out[i].ratio, out[i].goodBack = append(out[i].ratio, math.NaN()), append(out[i].goodBack, never)
				}
				out[i].overallRatio, out[i].singleRatio = math.NaN(), math.NaN()
			}
			return out, nil
		}
		bestOf[p], names[p] = bi, all[bi].name
		b := out[bi]
		best.goodput = append(best.goodput, b.goodput[p])
		best.ofCeiling = append(best.ofCeiling, b.ofCeiling[p])
		best.p50, best.p99 = append(best.p50, b.p50[p]), append(best.p99, b.p99[p])
		best.limit, best.limitLo, best.limitHi = append(best.limit, b.limit[p]), append(best.limitLo, b.limitLo[p]), append(best.limitHi, b.limitHi[p])
		best.limitBack = append(best.limitBack, b.limitBack[p])
		best.ends = append(best.ends, b.ends[p])
		for e := range endings {
			best.allEnds[e] += b.ends[p][e]
		}
		best.overall += b.goodput[p] / float64(len(sc.phases))
		lat = append(lat, rs[bi].latency[p]...)
	}
	best.allP50, best.allP99 = quantile(lat, 0.5), quantile(lat, 0.99)
	for _, bi := range bestOf {
		best.lag = max(best.lag, out[bi].lag)
	}
	for i, ns := range all {
		if ns.group == "static" {
			single = max(single, out[i].overall)
		}
	}

	for i := range out {
		s := &out[i]
		for p := range sc.phases {
			s.ratio = append(s.ratio, s.goodput[p]/best.goodput[p])
			if i == len(rs) {
				s.goodBack = append(s.goodBack, 0)
			} else {
				s.goodBack = append(s.goodBack, goodputBack(rs[i].served, rs[bestOf[p]].served, p, bpp))
			}
		}
		s.overallRatio, s.singleRatio = s.overall/best.overall, s.overall/single
	}
	return out, names
}

// limitBack returns how long after the step into phase p (the start, for the
// first phase) the limit came within limitBand of the new capacity for good:
// the time of the first of the samples from the step (the previous phase's
// last) to the phase's last that all lie within the band; never if the last
// does not. It is loadBound for a phase whose load is below the capacity.
func limitBack(sc scenario, limits []int, p, bpp int) time.Duration {
	if sc.phases[p].load() < 1 {
		return loadBound
	}
	c := float64(sc.phases[p].capacity)
	back := never
	for i := bpp; i >= 0; i-- {
		if p == 0 && i == 0 { // no sample at the start: the first is at the end of the first bucket
			break
		}
		l := float64(limits[p*bpp-1+i])
		if l < (1-limitBand)*c || l > (1+limitBand)*c {
			break
		}
		back = time.Duration(i) * bucket
	}
	return back
}

// goodputBack returns how long after the step into phase p the goodput came
// within goodputBand of the phase's steady best for good: from then on, every
// window of goodputSpan within the phase served at least (1-goodputBand) times
// what the phase's best static limit served per second over the phase's second
// half (ref, by completion).
func goodputBack(served, ref []int, p, bpp int) time.Duration {
	w := min(int(goodputSpan/bucket), bpp/2)
	steady := float64(sum(ref[p*bpp+bpp/2:(p+1)*bpp])) / float64(bpp-bpp/2)
	back := never
	for i := bpp - w; i >= 0; i-- {
		k := p*bpp + i
		if float64(sum(served[k:k+w])) < (1-goodputBand)*steady*float64(w) {
			break
		}
		back = time.Duration(i) * bucket
	}
	return back
}

func sum(x []int) int {
	n := 0
	for _, v := range x {
		n += v
	}
	return n
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// report prints, per phase and over the run, the median and range over runs
// of each number of every strategy, then the targets of the adaptive ones.
func report(w io.Writer, sc scenario, all []namedStrategy, results [][]result, clock string) {
	var per [][]stats // [run][strategy]
	var bestNames [][]string
	for _, rs := range results {
		st, names := measure(sc, all, rs)
		per, bestNames = append(per, st), append(bestNames, names)
	}
	rows := make([]string, 0, len(all)+1)
	for _, s := range all {
		rows = append(rows, s.name)
	}
	hasBest := bestNames[0] != nil
	if hasBest {
		rows = append(rows, "best static (per phase)")
	}
	// cell formats the median over runs of f and its range; "–" for NaN.
	cell := func(i int, f func(stats) float64, format string) string {
		v := make([]float64, 0, len(per))
		for _, run := range per {
			if x := f(run[i]); !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			return "–"
		}
		slices.Sort(v)
		m := fmt.Sprintf(format, v[len(v)/2])
		if len(v) == 1 || fmt.Sprintf(format, v[0]) == fmt.Sprintf(format, v[len(v)-1]) {
			return m
		}
		return m + " (" + fmt.Sprintf(format, v[0]) + "–" + fmt.Sprintf(format, v[len(v)-1]) + ")"
	}
	dur := func(i int, f func(stats) time.Duration) string {
		return strings.ReplaceAll(cell(i, func(s stats) float64 {
			switch d := f(s); d {
			case never:
				return math.Inf(1)
			case loadBound:
				return math.NaN()
			default:
				return d.Seconds()
			}
		}, "%.1f"), "+Inf", "never")
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(x float64) float64 { return 100 * x }

	fmt.Fprintf(w, "Scenario %s: %s.\n", sc.name, sc.about)
	fmt.Fprintf(w, "Clock: %s. %d run(s), each its own Poisson arrivals, replayed for every strategy; the strategies run one after another.\n", clock, len(per))
	fmt.Fprintf(w, "Backend: %s\n", sc.server.describe())
	fmt.Fprintf(w, "Each request: deadline %v from arrival; it waits at most %v in the limiter's queue. Adaptive limits start at %s. Phases of %v:\n",
		sc.deadline, sc.queueBudget, strings.Trim(fmt.Sprint(sc.initials), "[]"), sc.phaseLen)
	for p, ph := range sc.phases {
		fmt.Fprintf(w, "  %d. capacity %d, base latency %v (up to %.0f/s), load %.2gx (%.0f arrivals/s)\n", p+1, ph.capacity, ph.base, ph.throughput(), ph.load(), ph.rate)
	}
	fmt.Fprintf(w, "Every number is the median of the runs (range). Goodput: requests served within their deadline, per second, by phase of arrival; ÷ ceiling: of min(offered, capacity).\n")
	fmt.Fprintf(w, "Refused at once: turned away within %v; later: turned away after waiting longer, before the budget; queue timeouts: the budget ran out; late: admitted, answered after the deadline.\n", atOnce)
	fmt.Fprintf(w, "Told at once: refused at once, as a share of the callers not served within their deadline. Late %%: of the phase's arrivals.\n")
	fmt.Fprintf(w, "Start lag: how late a request's caller started after its arrival, the machine's scheduling noise (0 in simulated time).\n")
	fmt.Fprintf(w, "Limit back: seconds from the step (the start, for the first phase) until the limit is within ±%.0f%% of the capacity and stays there, in a phase loaded past its capacity (– below it); goodput back: until every %v window serves within %.0f%% of the phase's best static limit in the second half of the phase.\n",
		100*limitBand, goodputSpan, 100*goodputBand)

	for p, ph := range sc.phases {
		fmt.Fprintf(w, "\n### Phase %d: capacity %d, base latency %v, load %.2gx", p+1, ph.capacity, ph.base, ph.load())
		if hasBest {
			var names []string
			for _, n := range bestNames {
				names = append(names, n[p])
			}
			fmt.Fprintf(w, "; best static: %s", strings.Join(names, ", "))
		}
		fmt.Fprint(w, "\n\n| strategy | goodput/s | ÷ ceiling | × best static | p50 ms | p99 ms | limit | limit min–max | limit ÷ capacity | limit back s | goodput back s | refused at once | later | queue timeouts | late | told at once % | late % |\n")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		for i, n := range rows {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, run := range per {
				lo, hi = min(lo, run[i].limitLo[p]), max(hi, run[i].limitHi[p])
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.0f–%.0f | %s | %s | %s |", n,
				cell(i, func(s stats) float64 { return s.goodput[p] }, "%.0f"),
				cell(i, func(s stats) float64 { return s.ofCeiling[p] }, "%.2f"),
				cell(i, func(s stats) float64 { return s.ratio[p] }, "%.2f"),
				cell(i, func(s stats) float64 { return ms(s.p50[p]) }, "%.0f"),
				cell(i, func(s stats) float64 { return ms(s.p99[p]) }, "%.0f"),
				cell(i, func(s stats) float64 { return s.limit[p] }, "%.0f"), lo, hi,
				cell(i, func(s stats) float64 { return s.limit[p] / float64(ph.capacity) }, "%.2f"),
				dur(i, func(s stats) time.Duration { return s.limitBack[p] }),
				dur(i, func(s stats) time.Duration { return s.goodBack[p] }))
			for _, e := range []ending{refused, refusedLater, queueTimeout, late} {
				fmt.Fprintf(w, " %s |", cell(i, func(s stats) float64 { return float64(s.ends[p][e]) }, "%.0f"))
			}
			fmt.Fprintf(w, " %s | %s |\n", cell(i, func(s stats) float64 { return pct(toldAtOnce(s.ends[p])) }, "%.0f"),
				cell(i, func(s stats) float64 { return pct(lateShare(s.ends[p])) }, "%.1f"))
		}
	}

	fmt.Fprintf(w, "\n### The whole run\n\n| strategy | goodput/s | × best static per phase | × best single static | p50 ms | p99 ms | refused at once | later | queue timeouts | late | told at once %% | late %% | start lag p99 ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, n := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |", n,
			cell(i, func(s stats) float64 { return s.overall }, "%.0f"),
			cell(i, func(s stats) float64 { return s.overallRatio }, "%.2f"),
			cell(i, func(s stats) float64 { return s.singleRatio }, "%.2f"),
			cell(i, func(s stats) float64 { return ms(s.allP50) }, "%.0f"),
			cell(i, func(s stats) float64 { return ms(s.allP99) }, "%.0f"))
		for _, e := range []ending{refused, refusedLater, queueTimeout, late} {
			fmt.Fprintf(w, " %s |", cell(i, func(s stats) float64 { return float64(s.allEnds[e]) }, "%.0f"))
		}
		fmt.Fprintf(w, " %s | %s | %s |\n", cell(i, func(s stats) float64 { return pct(toldAtOnce(s.allEnds)) }, "%.0f"),
			cell(i, func(s stats) float64 { return pct(lateShare(s.allEnds)) }, "%.1f"),
			cell(i, func(s stats) float64 { return ms(s.lag) }, "%.0f"))
	}
	if hasBest {
		printTargets(w, sc, all, per)
	}
}
