// Command benchratio reads `go test -bench` output (from the files named, or
// standard input) and prints the performance targets as a Markdown table: the median
// of each measurement across -count runs, the ratio against the peer, and whether
// the target is met. scripts/bench.sh runs it after benchstat.
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// key names one measurement: benchmark path without the impl and cpu suffix,
// implementation, GOMAXPROCS and unit.
type key struct {
	bench, impl string
	cpu         int
	unit        string
}

type samples map[key][]float64

func main() {
	s := samples{}
	var inputs []io.Reader
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchratio:", err)
			os.Exit(2)
		}
		defer f.Close()
		inputs = append(inputs, f)
	}
	if len(inputs) == 0 {
		inputs = append(inputs, os.Stdin)
	}
	for _, in := range inputs {
		s.read(in)
	}
	s.report(os.Stdout)
}

// read parses lines like
//
//	BenchmarkHandoff/impl=fairsem-4   3000000   343.0 ns/op   0.99 queued/op   0 B/op   0 allocs/op
func (s samples) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name, cpu := f[0], 1
		if i := strings.LastIndex(name, "-"); i > 0 {
			if n, err := strconv.Atoi(name[i+1:]); err == nil {
				name, cpu = name[:i], n
			}
		}
		bench, impl, _ := strings.Cut(name, "/impl=")
		bench = strings.TrimPrefix(bench, "Benchmark")
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			k := key{bench, impl, cpu, f[i+1]}
			s[k] = append(s[k], v)
		}
	}
}

func (s samples) median(bench, impl string, cpu int, unit string) (float64, bool) {
	v := slices.Clone(s[key{bench, impl, cpu, unit}])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

type row struct {
	target, measure string
	value           string
	goal            string
	met             string
}

func (s samples) report(w io.Writer) {
	var rows []row
	add := func(target, measure, value, goal string, ok, known bool) {
		met := "—"
		switch {
		case !known:
			value, met = "not measured", "—"
		case goal == "reported": // a reference point, not a target
		case ok:
			met = "yes"
		default:
			met = "**no**"
		}
		rows = append(rows, row{target, measure, value, goal, met})
	}
	ratio := func(target, bench string, cpu int, peer string, goal float64) {
		a, ok1 := s.median(bench, "fairsem", cpu, "ns/op")
		b, ok2 := s.median(bench, peer, cpu, "ns/op")
		r := a / b
		add(target, fmt.Sprintf("%s -cpu %d: fairsem / %s", bench, cpu, peer),
			fmt.Sprintf("%.3g ns / %.3g ns = **%.2fx**", a, b, r), fmt.Sprintf("<= %.2gx", goal), r <= goal, ok1 && ok2)
	}
	// floor reports, without a goal, how the peer compares with the atomic
	// operations of the lock-free protocol alone (impl=atomics).
	floor := func(target, bench string, cpu int, peer string) {
		a, ok1 := s.median(bench, peer, cpu, "ns/op")
		b, ok2 := s.median(bench, "atomics", cpu, "ns/op")
		add(target, fmt.Sprintf("%s -cpu %d: %s / atomics (the protocol's floor)", bench, cpu, peer),
			fmt.Sprintf("%.3g ns / %.3g ns = **%.2fx**", a, b, a/b), "reported", true, ok1 && ok2)
	}
	// allocs uses the benchmarks' exact mallocs/op and mallocs/blocked where they
	// report them; the testing package's allocs/op is truncated to an integer.
	allocs := func(target, bench, impl string, cpu int, goal float64, perBlocked bool) {
		unit := "mallocs/op"
		if perBlocked {
			unit = "mallocs/blocked"
		}
		v, ok := s.median(bench, impl, cpu, unit)
		if !ok && !perBlocked {
			unit = "allocs/op"
			v, ok = s.median(bench, impl, cpu, unit)
		}
		// Per blocked call, the allocations of the testing package and the runtime
		// between the two readings are divided by the calls that blocked, a few
		// hundred when the handoff is usually caught without parking: the same
		// 0.05 of slack as per op.
		met := v <= goal
		if perBlocked {
			met = v <= goal+0.05
		}
		add(target, fmt.Sprintf("%s -cpu %d: %s", bench, cpu, unit), fmt.Sprintf("%.3g", v), fmt.Sprintf("<= %g", goal), met, ok)
	}
	metric := func(target, unit, goal string, limit float64, below bool) {
		v, ok := s.median("ManyWaiters", "fairsem", 2, unit)
		met := v <= limit
		if unit == "B/waiter" {
			// A waiter's node is one heap object of a size class; the fraction of a
			// byte above it is other heap activity between the two readings.
			met = math.Round(v) <= limit
		}
		if below {
			met = v < limit
		}
		add(target, "ManyWaiters: "+unit, fmt.Sprintf("%.4g", v), goal, met, ok)
	}

	ratio("P1", "AcquireRelease", 2, "xsync", 0.6)
	ratio("P1", "AcquireRelease", 2, "mutex", 1.4)
	ratio("P2", "TryAcquireRelease", 2, "xsync", 0.6)
	ratio("P2", "TryAcquireRelease", 2, "mutex", 1.3)
	floor("P1", "AcquireRelease", 2, "fairsem")
	floor("P1", "AcquireRelease", 2, "mutex")
	floor("P2", "TryAcquireRelease", 2, "fairsem")
	floor("P2", "TryAcquireRelease", 2, "mutex")
	allocs("P1", "AcquireRelease", "fairsem", 2, 0, false)
	allocs("P2", "TryAcquireRelease", "fairsem", 2, 0, false)
	for _, cpu := range []int{2, 4, 8} {
		// With one goroutine per core a handoff is usually caught without
		// parking; with more goroutines than cores every one parks.
		xsync, channel := 0.6, 1.6
		if cpu == 2 {
			xsync, channel = 0.25, 0.6
		}
		ratio("P3", "Handoff", cpu, "xsync", xsync)
		ratio("P3", "Handoff", cpu, "channel", channel)
		allocs("P3", "Handoff", "fairsem", cpu, 0.05, false)
	}
	for _, cpu := range []int{2, 4, 8} {
		ratio("P4", "HandoffTimeout", cpu, "xsync", 0.5)
		allocs("P4", "HandoffTimeout", "fairsem", cpu, 1, true)
	}
	// The contended path that never blocks: two goroutines on two cores take
	// turns at one word; more goroutines than cores make x/sync's mutex park.
	ratio("P5", "WeightedMix", 2, "xsync", 0.8)
	for _, cpu := range []int{4, 8} {
		ratio("P5", "WeightedMix", cpu, "xsync", 0.3)
	}
	metric("P6", "B/waiter", "<= 64", 64, false)
	metric("P6", "ms/break", "< 100", 100, true)
	brk, ok1 := s.median("ManyWaiters", "fairsem", 2, "ms/break")
	closing, ok2 := s.median("ManyWaiters", "channel", 2, "ms/break")
	add("P6", "ManyWaiters: Break / closing a channel as many wait on (the floor)",
		fmt.Sprintf("%.4g ms / %.4g ms = **%.2fx**", brk, closing, brk/closing), "reported", true, ok1 && ok2)
	metric("P6", "ns/cancel-middle", "O(1): no walk of the list", 1e6, false)
	metric("P6", "ns/wake-per-waiter", "O(k): constant per waiter", 1e4, false)
	a, ok1 := s.median("AcquireUnitsRelease", "fairsem", 2, "ns/op")
	b, ok2 := s.median("AcquireUnitsRelease", "fairsem-plain", 2, "ns/op")
	add("P7", "AcquireUnitsRelease -cpu 2: Units / plain Acquire+Release",
		fmt.Sprintf("%.3g ns / %.3g ns = **%.2fx**", a, b, a/b), "<= 1.3x", a/b <= 1.3, ok1 && ok2)
	allocs("P7", "AcquireUnitsRelease", "fairsem", 2, 1, false)
	// The cost of one idle semaphore, as in a map of per-key limits.
	for _, impl := range []string{"fairsem", "xsync"} {
		v, ok := s.median("New", impl, 2, "bytes/semaphore")
		goal := "<= 128"
		if impl == "xsync" {
			goal = "reported"
		}
		add("P8", "New: "+impl+" bytes per idle semaphore (a million kept)", fmt.Sprintf("%.4g", v), goal, v <= 128, ok)
	}
	allocs("P8", "New", "fairsem", 2, 1, false)

	fmt.Fprintln(w, "| target | measurement (median) | value | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.target, r.measure, r.value, r.goal, r.met)
	}
}
