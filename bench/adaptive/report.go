package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// stats is one strategy's numbers in one run.
type stats struct {
	goodput  []float64       // per phase, served per second
	overall  float64         // served per second over the run
	p50, p99 time.Duration   // of served requests, over the run
	phaseP99 []time.Duration // of served requests, per phase of arrival
	reconv   []time.Duration // per capacity step: time to get back to 90% of the best static's goodput; -1 never
	refused  int
	timedOut int
}

// measure computes the numbers of every strategy in one run, and those of
// the best static limit in hindsight (per phase, the static with the most
// goodput), appended last.
func measure(all []namedStrategy, rs []result, phaseLen time.Duration) []stats {
	bpp := int(phaseLen / bucket) // buckets per phase
	out := make([]stats, len(rs)+1)
	for i, r := range rs {
		s := &out[i]
		var lat []time.Duration
		total := 0
		for p := range phases {
			n := sum(r.served[p*bpp : (p+1)*bpp])
			s.goodput = append(s.goodput, float64(n)/phaseLen.Seconds())
			total += n
			lat = append(lat, r.latency[p]...)
			s.phaseP99 = append(s.phaseP99, quantile(r.latency[p], 0.99))
		}
		s.overall = float64(total) / (phaseLen * time.Duration(len(phases))).Seconds()
		s.p50, s.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
		s.refused, s.timedOut = r.refused, r.timedOut
	}
	// The best static per phase.
	best := &out[len(rs)]
	bestOf := make([]int, len(phases))
	var lat []time.Duration
	for p := range phases {
		bi := -1
		for i, ns := range all {
			if ns.group == "static" && (bi < 0 || out[i].goodput[p] > out[bi].goodput[p]) {
				bi = i
			}
		}
		bestOf[p] = bi
		best.goodput = append(best.goodput, out[bi].goodput[p])
		best.overall += out[bi].goodput[p] / float64(len(phases))
		lat = append(lat, rs[bi].latency[p]...)
		best.phaseP99 = append(best.phaseP99, quantile(rs[bi].latency[p], 0.99))
	}
	best.p50, best.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	// Re-convergence after each step, against 90% of the best static's goodput.
	const span = 5 // buckets the goodput must hold over: 0.5s
	for i := range out {
		for p := 1; p < len(phases); p++ {
			served := func(k int) int {
				if i == len(rs) {
					return rs[bestOf[p]].served[k]
				}
				return rs[i].served[k]
			}
			target := 0.9 * best.goodput[p] * bucket.Seconds() * span
			d := time.Duration(-1)
			for k := p * bpp; k+span <= (p+1)*bpp; k++ {
				n := 0
				for j := k; j < k+span; j++ {
					n += served(j)
				}
				if float64(n) >= target {
					d = time.Duration(k-p*bpp) * bucket
					break
				}
			}
			out[i].reconv = append(out[i].reconv, d)
		}
	}
	return out
}

func sum(x []int) int {
	n := 0
	for _, v := range x {
		n += v
	}
	return n
}

// report prints the median and range over runs of each number.
func report(w io.Writer, all []namedStrategy, results [][]result, phaseLen time.Duration) {
	var per [][]stats // [run][strategy]
	for _, rs := range results {
		per = append(per, measure(all, rs, phaseLen))
	}
	names := make([]string, 0, len(all)+1)
	for _, s := range all {
		names = append(names, s.name)
	}
	names = append(names, "best static (per phase)")
	med := func(i int, f func(stats) float64) (m, lo, hi float64) {
		var v []float64
		for _, run := range per {
			v = append(v, f(run[i]))
		}
		slices.Sort(v)
		return v[len(v)/2], v[0], v[len(v)-1]
	}
	rng := func(i int, f func(stats) float64, unit string) string {
		m, lo, hi := med(i, f)
		if len(per) == 1 {
			return fmt.Sprintf("%.0f%s", m, unit)
		}
		return fmt.Sprintf("%.0f%s (%.0f–%.0f)", m, unit, lo, hi)
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }

	fmt.Fprintf(w, "\nGoodput (requests served within the deadline, per second): median of %d runs (range)\n\n", len(per))
	fmt.Fprint(w, "| strategy |")
	for p, ph := range phases {
		fmt.Fprintf(w, " phase %d: cap %d, %v |", p+1, ph.capacity, ph.base)
	}
	fmt.Fprintln(w, " overall |")
	fmt.Fprintln(w, "|---|"+strings.Repeat("---|", len(phases)+1))
	for i, n := range names {
		fmt.Fprintf(w, "| %s |", n)
		for p := range phases {
			fmt.Fprintf(w, " %s |", rng(i, func(s stats) float64 { return s.goodput[p] }, ""))
		}
		fmt.Fprintf(w, " %s |\n", rng(i, func(s stats) float64 { return s.overall }, ""))
	}

	fmt.Fprintf(w, "\nLimit (median over each phase, first run)\n\n| strategy |")
	for p := range phases {
		fmt.Fprintf(w, " phase %d |", p+1)
	}
	fmt.Fprintln(w, "\n|---|"+strings.Repeat("---|", len(phases)))
	bpp := int(phaseLen / bucket)
	for i, s := range all {
		if s.group == "static" {
			continue
		}
		fmt.Fprintf(w, "| %s |", s.name)
		for p := range phases {
			l := slices.Clone(results[0][i].limits[p*bpp : (p+1)*bpp])
			slices.Sort(l)
			fmt.Fprintf(w, " %d (%d–%d) |", l[len(l)/2], l[0], l[len(l)-1])
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "\nLatency of served requests (from arrival, ms) and re-convergence after each step (s to 90%% of the best static's goodput; - never)\n\n")
	fmt.Fprint(w, "| strategy | p50 | p99 |")
	for p := range phases {
		fmt.Fprintf(w, " p99 phase %d |", p+1)
	}
	for p := 1; p < len(phases); p++ {
		fmt.Fprintf(w, " step %d→%d |", p, p+1)
	}
	fmt.Fprintln(w, " refused | timed out |")
	fmt.Fprintln(w, "|---|---|---|"+strings.Repeat("---|", 2*len(phases)-1)+"---|---|")
	for i, n := range names {
		fmt.Fprintf(w, "| %s | %s | %s |", n, rng(i, func(s stats) float64 { return ms(s.p50) }, ""),
			rng(i, func(s stats) float64 { return ms(s.p99) }, ""))
		for p := range phases {
			fmt.Fprintf(w, " %s |", rng(i, func(s stats) float64 { return ms(s.phaseP99[p]) }, ""))
		}
		for p := range len(phases) - 1 {
			var v []float64
			for _, run := range per {
				d := run[i].reconv[p]
				if d < 0 {
					d = time.Hour
				}
				v = append(v, d.Seconds())
			}
			slices.Sort(v)
			cell := func(x float64) string {
				if x >= 3600 {
					return "-"
				}
				return fmt.Sprintf("%.1f", x)
			}
			if len(v) == 1 {
				fmt.Fprintf(w, " %s |", cell(v[0]))
			} else {
				fmt.Fprintf(w, " %s (%s–%s) |", cell(v[len(v)/2]), cell(v[0]), cell(v[len(v)-1]))
			}
		}
		if i < len(all) {
			fmt.Fprintf(w, " %s | %s |\n", rng(i, func(s stats) float64 { return float64(s.refused) }, ""),
				rng(i, func(s stats) float64 { return float64(s.timedOut) }, ""))
		} else {
			fmt.Fprintln(w, " | |")
		}
	}

	// The targets, for each of ours against the best static and failsafe-go.
	fmt.Fprintf(w, "\nTargets (medians): goodput >= 90%% of the best static in every phase; overall goodput above both failsafe-go runs; p99 <= failsafe-go's (lower of the two); re-converges within 2s of each step\n\n")
	bestIdx := len(all)
	var fs []int
	for i, s := range all {
		if s.group == "failsafe" {
			fs = append(fs, i)
		}
	}
	for i, s := range all {
		if s.group != "adaptive" {
			continue
		}
		var miss []string
		for p := range phases {
			g, _, _ := med(i, func(s stats) float64 { return s.goodput[p] })
			b, _, _ := med(bestIdx, func(s stats) float64 { return s.goodput[p] })
			if g < 0.9*b {
				miss = append(miss, fmt.Sprintf("phase %d goodput %.0f%% of best static", p+1, 100*g/b))
			}
		}
		o, _, _ := med(i, func(s stats) float64 { return s.overall })
		p99, _, _ := med(i, func(s stats) float64 { return ms(s.p99) })
		for _, f := range fs {
			fo, _, _ := med(f, func(s stats) float64 { return s.overall })
			fp, _, _ := med(f, func(s stats) float64 { return ms(s.p99) })
			if o <= fo {
				miss = append(miss, fmt.Sprintf("overall goodput %.0f <= %s's %.0f", o, all[f].name, fo))
			}
			if p99 > fp {
				miss = append(miss, fmt.Sprintf("p99 %.0fms > %s's %.0fms", p99, all[f].name, fp))
			}
		}
		for p := range len(phases) - 1 {
			var v []float64
			for _, run := range per {
				d := run[i].reconv[p]
				if d < 0 {
					d = time.Hour
				}
				v = append(v, d.Seconds())
			}
			slices.Sort(v)
			if v[len(v)/2] > 2 {
				miss = append(miss, fmt.Sprintf("step %d→%d re-convergence > 2s", p+1, p+2))
			}
		}
		if len(miss) == 0 {
			fmt.Fprintf(w, "- %s: all targets met\n", s.name)
		} else {
			fmt.Fprintf(w, "- %s: missed: %s\n", s.name, strings.Join(miss, "; "))
		}
	}
}
