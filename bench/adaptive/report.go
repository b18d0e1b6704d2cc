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

// stats is one strategy's numbers in one run.
type stats struct {
	goodput, ratio      []float64       // per phase: served per second; its ratio to the phase's best static
	p50, p99            []time.Duration // per phase, of served requests, from arrival
	limit               []float64       // per phase: the median of the limit's samples
	limitLo, limitHi    []float64       // per phase: the least and most of them
	limitBack, goodBack []time.Duration // per phase: time from the step into it until the limit, the goodput, is back; never
	ends                [][endings]int  // per phase

	overall, overallRatio, singleRatio float64       // goodput over the run; its ratio to the per-phase best static's, to the best single static's
	allP50, allP99                     time.Duration // over the run
	lag                                time.Duration // p99 of how late the callers started: the machine's scheduling noise
	allEnds                            [endings]int
}

// measure computes the numbers of every strategy in one run and appends those
// of the best static limit per phase (the static with the most goodput in
// each phase), whose name is given per phase.
func measure(all []namedStrategy, rs []result, ld load) ([]stats, []string) {
	bpp := int(ld.phaseLen / bucket)
	out := make([]stats, len(rs)+1)
	for i, r := range rs {
		s := &out[i]
		var lat []time.Duration
		for p := range phases {
			s.goodput = append(s.goodput, float64(r.ends[p][served])/ld.phaseLen.Seconds())
			s.p50 = append(s.p50, quantile(r.latency[p], 0.5))
			s.p99 = append(s.p99, quantile(r.latency[p], 0.99))
			l := slices.Clone(r.limits[p*bpp : (p+1)*bpp])
			slices.Sort(l)
			s.limit = append(s.limit, float64(l[len(l)/2]))
			s.limitLo, s.limitHi = append(s.limitLo, float64(l[0])), append(s.limitHi, float64(l[len(l)-1]))
			s.limitBack = append(s.limitBack, limitBack(r.limits, p, bpp))
			s.ends = append(s.ends, r.ends[p])
			for e := range endings {
				s.allEnds[e] += r.ends[p][e]
			}
			lat = append(lat, r.latency[p]...)
		}
		s.overall = float64(s.allEnds[served]) / (ld.phaseLen * time.Duration(len(phases))).Seconds()
		s.allP50, s.allP99 = quantile(lat, 0.5), quantile(lat, 0.99)
		s.lag = quantile(r.lag, 0.99)
	}

	best := &out[len(rs)]
	names := make([]string, len(phases))
	bestOf := make([]int, len(phases))
	var lat []time.Duration
	single := 0.0
	for p := range phases {
		bi := -1
		for i, ns := range all {
			if ns.group == "static" && (bi < 0 || out[i].goodput[p] > out[bi].goodput[p]) {
				bi = i
			}
		}
		if bi < 0 { // no static limit ran: no reference
			out = out[:len(rs)]
			for i := range out {
				for range phases {
					out[i].ratio, out[i].goodBack = append(out[i].ratio, math.NaN()), append(out[i].goodBack, never)
				}
				out[i].overallRatio, out[i].singleRatio = math.NaN(), math.NaN()
			}
			return out, nil
		}
		bestOf[p], names[p] = bi, all[bi].name
		b := out[bi]
		best.goodput = append(best.goodput, b.goodput[p])
		best.p50, best.p99 = append(best.p50, b.p50[p]), append(best.p99, b.p99[p])
		best.limit, best.limitLo, best.limitHi = append(best.limit, b.limit[p]), append(best.limitLo, b.limitLo[p]), append(best.limitHi, b.limitHi[p])
		best.limitBack = append(best.limitBack, b.limitBack[p])
		best.ends = append(best.ends, b.ends[p])
		for e := range endings {
			best.allEnds[e] += b.ends[p][e]
		}
		best.overall += b.goodput[p] / float64(len(phases))
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
		for p := range phases {
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

// limitBack returns how long after the step into phase p the limit came within
// limitBand of the new capacity for good: the time of the first of the
// samples from the step (the previous phase's last) to the phase's last that
// all lie within the band; never if the last does not.
func limitBack(limits []int, p, bpp int) time.Duration {
	if p == 0 {
		return never
	}
	c := float64(phases[p].capacity)
	back := never
	for i := bpp; i >= 0; i-- {
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
func report(w io.Writer, all []namedStrategy, results [][]result, ld load, clock string) {
	var per [][]stats // [run][strategy]
	var bestNames [][]string
	for _, rs := range results {
		st, names := measure(all, rs, ld)
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
	// cell formats the median over runs of f and its range.
	cell := func(i int, f func(stats) float64, format string) string {
		v := make([]float64, 0, len(per))
		for _, run := range per {
			v = append(v, f(run[i]))
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
			if d := f(s); d != never {
				return d.Seconds()
			}
			return math.Inf(1)
		}, "%.1f"), "+Inf", "never")
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

	fmt.Fprintf(w, "Clock: %s. %d run(s), each its own Poisson arrivals, replayed for every strategy; the strategies run one after another.\n", clock, len(per))
	fmt.Fprintf(w, "Backend: processor sharing; past its capacity C, n in flight share a throughput of C/(1+%.2f(n-C)) at base latency; it serves a request whose caller left to its end.\n", thrash)
	fmt.Fprintf(w, "Each request: deadline %v from arrival; it waits at most %v in the limiter's queue. Phases of %v:\n", ld.deadline, ld.queueBudget, ld.phaseLen)
	for p, ph := range phases {
		fmt.Fprintf(w, "  %d. capacity %d, base latency %v (up to %.0f/s), load %.1fx (%.0f arrivals/s)\n", p+1, ph.capacity, ph.base, ph.throughput(), ph.load, ph.rate())
	}
	fmt.Fprintf(w, "Every number is the median of the runs (range). Goodput: requests served within their deadline, per second, by phase of arrival.\n")
	fmt.Fprintf(w, "Start lag: how late a request's caller started after its arrival, the machine's scheduling noise (0 in simulated time).\n")
	fmt.Fprintf(w, "Limit back: seconds from the step until the limit is within ±%.0f%% of the new capacity and stays there; goodput back: until every %v window serves within %.0f%% of the phase's best static limit in the second half of the phase.\n",
		100*limitBand, goodputSpan, 100*goodputBand)

	for p, ph := range phases {
		fmt.Fprintf(w, "\n### Phase %d: capacity %d, base latency %v, load %.1fx", p+1, ph.capacity, ph.base, ph.load)
		if hasBest {
			var names []string
			for _, n := range bestNames {
				names = append(names, n[p])
			}
			fmt.Fprintf(w, "; best static: %s", strings.Join(names, ", "))
		}
		fmt.Fprint(w, "\n\n| strategy | goodput/s | × best static | p50 ms | p99 ms | limit | limit min–max | limit ÷ capacity |")
		if p > 0 {
			fmt.Fprint(w, " limit back s | goodput back s |")
		}
		fmt.Fprintln(w, " refused | queue timeouts | late |")
		fmt.Fprint(w, "|---|---|---|---|---|---|---|---|")
		if p > 0 {
			fmt.Fprint(w, "---|---|")
		}
		fmt.Fprintln(w, "---|---|---|")
		for i, n := range rows {
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, run := range per {
				lo, hi = min(lo, run[i].limitLo[p]), max(hi, run[i].limitHi[p])
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.0f–%.0f | %s |", n,
				cell(i, func(s stats) float64 { return s.goodput[p] }, "%.0f"),
				cell(i, func(s stats) float64 { return s.ratio[p] }, "%.2f"),
				cell(i, func(s stats) float64 { return ms(s.p50[p]) }, "%.0f"),
				cell(i, func(s stats) float64 { return ms(s.p99[p]) }, "%.0f"),
				cell(i, func(s stats) float64 { return s.limit[p] }, "%.0f"), lo, hi,
				cell(i, func(s stats) float64 { return s.limit[p] / float64(ph.capacity) }, "%.2f"))
			if p > 0 {
				fmt.Fprintf(w, " %s | %s |", dur(i, func(s stats) time.Duration { return s.limitBack[p] }),
					dur(i, func(s stats) time.Duration { return s.goodBack[p] }))
			}
			for _, e := range []ending{refused, queueTimeout, late} {
				fmt.Fprintf(w, " %s |", cell(i, func(s stats) float64 { return float64(s.ends[p][e]) }, "%.0f"))
			}
			fmt.Fprintln(w)
		}
	}

	fmt.Fprintf(w, "\n### The whole run\n\n| strategy | goodput/s | × best static per phase | × best single static | p50 ms | p99 ms | refused | queue timeouts | late | start lag p99 ms |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for i, n := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |", n,
			cell(i, func(s stats) float64 { return s.overall }, "%.0f"),
			cell(i, func(s stats) float64 { return s.overallRatio }, "%.2f"),
			cell(i, func(s stats) float64 { return s.singleRatio }, "%.2f"),
			cell(i, func(s stats) float64 { return ms(s.allP50) }, "%.0f"),
			cell(i, func(s stats) float64 { return ms(s.allP99) }, "%.0f"))
		for _, e := range []ending{refused, queueTimeout, late} {
			fmt.Fprintf(w, " %s |", cell(i, func(s stats) float64 { return float64(s.allEnds[e]) }, "%.0f"))
		}
		fmt.Fprintf(w, " %s |\n", cell(i, func(s stats) float64 { return ms(s.lag) }, "%.0f"))
	}
	if hasBest {
		targets(w, all, per)
	}
}

// targets prints, for each adaptive strategy, the targets it misses, on the
// medians of the runs.
func targets(w io.Writer, all []namedStrategy, per [][]stats) {
	med := func(i int, f func(stats) float64) float64 {
		v := make([]float64, 0, len(per))
		for _, run := range per {
			v = append(v, f(run[i]))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	secs := func(d time.Duration) float64 {
		if d == never {
			return math.Inf(1)
		}
		return d.Seconds()
	}
	best := len(all)
	tuned := slices.IndexFunc(all, func(s namedStrategy) bool { return s.name == "failsafe-go tuned" })
	fmt.Fprintf(w, "\n### Targets\n\nOn the medians: after each drop of the capacity the limit is back within 1s, after each rise within 2s, "+
		"and a change of base latency alone cuts the median limit by at most 25%%; while the load is below the capacity the limit stays within 1.5x of it; "+
		"goodput >= 0.95 of the best static limit in every phase and >= failsafe-go tuned's over the run; p99 <= 1.1x the best static's in every phase.\n\n")
	for i, s := range all {
		if s.group != "adaptive" {
			continue
		}
		var miss []string
		for p := range phases {
			if p > 0 {
				prev, cur := phases[p-1], phases[p]
				switch {
				case cur.capacity < prev.capacity:
					if b := med(i, func(s stats) float64 { return secs(s.limitBack[p]) }); b > 1 {
						miss = append(miss, fmt.Sprintf("phase %d: limit %s", p+1, backText(b)))
					}
				case cur.capacity > prev.capacity:
					if b := med(i, func(s stats) float64 { return secs(s.limitBack[p]) }); b > 2 {
						miss = append(miss, fmt.Sprintf("phase %d: limit %s", p+1, backText(b)))
					}
				default:
					if r := med(i, func(s stats) float64 { return s.limit[p] / s.limit[p-1] }); r < 0.75 {
						miss = append(miss, fmt.Sprintf("phase %d: median limit cut to %.2fx the previous phase's", p+1, r))
					}
				}
			}
			if phases[p].load < 1 {
				if hi := med(i, func(s stats) float64 { return s.limitHi[p] }); hi > 1.5*float64(phases[p].capacity) {
					miss = append(miss, fmt.Sprintf("phase %d: limit up to %.0f, %.1fx the capacity, under load %.1fx", p+1, hi, hi/float64(phases[p].capacity), phases[p].load))
				}
			}
			if r := med(i, func(s stats) float64 { return s.ratio[p] }); r < 0.95 {
				miss = append(miss, fmt.Sprintf("phase %d: goodput %.2f of the best static's", p+1, r))
			}
			if r := med(i, func(s stats) float64 { return float64(s.p99[p]) }) / med(best, func(s stats) float64 { return float64(s.p99[p]) }); r > 1.1 {
				miss = append(miss, fmt.Sprintf("phase %d: p99 %.1fx the best static's", p+1, r))
			}
		}
		if tuned >= 0 {
			o, t := med(i, func(s stats) float64 { return s.overall }), med(tuned, func(s stats) float64 { return s.overall })
			if o < t {
				miss = append(miss, fmt.Sprintf("goodput over the run %.0f/s < failsafe-go tuned's %.0f/s", o, t))
			}
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
// the backend or the load allows, and in a phase of overload the static limit
// furthest above the capacity serves less than the one at it.
func checkModel(all []namedStrategy, rs []result, ld load) error {
	st, _ := measure(all, rs, ld)
	for p, ph := range phases {
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
		if want := 0.9 * min(ph.rate(), ph.throughput()); best < want {
			return fmt.Errorf("phase %d: the best static limit serves %.0f/s, under 90%% of the %.0f/s the phase allows", p+1, best, want/0.9)
		}
		if ph.load > 1 && atCap >= 0 && aboveLimit > ph.capacity && above >= atCap {
			return fmt.Errorf("phase %d: a static limit of %d serves %.0f/s, no less than %.0f/s at the capacity of %d: the backend does not thrash",
				p+1, aboveLimit, above, atCap, ph.capacity)
		}
	}
	return nil
}
