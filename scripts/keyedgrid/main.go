// Command keyedgrid reads the output of keyed's BenchmarkTenant, run in
// interleaved rounds (scripts/bench-keyed.sh), and prints every cell of the grid
// as a Markdown table: the median time per op of each implementation over the
// rounds, the ratio of keyed's median to the hand-written map's, the range of
// the ratios of the rounds (each round runs both, one after the other), and
// whether the median ratio is within the goal.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

var goal = flag.Float64("goal", 0.75, "the largest ratio of keyed's median time to the map's")

// cell names one cell of the grid: the benchmark without its impl, and -cpu.
type cell struct {
	name string
	cpu  int
}

func main() {
	flag.Parse()
	times := map[cell]map[string][]float64{} // impl -> ns/op, one per round, in order
	var order []cell
	var in io.Reader = os.Stdin
	if flag.NArg() > 0 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, "keyedgrid:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkTenant/") || f[3] != "ns/op" {
			continue
		}
		name, cpu := f[0], 1
		if i := strings.LastIndex(name, "-"); i > strings.LastIndex(name, "/") {
			if n, err := strconv.Atoi(name[i+1:]); err == nil { // -cpu N > 1, not a hyphen of the name
				name, cpu = name[:i], n
			}
		}
		i := strings.LastIndex(name, "/impl=")
		if i < 0 {
			continue
		}
		c, impl := cell{strings.TrimPrefix(name[:i], "BenchmarkTenant/"), cpu}, name[i+len("/impl="):]
		ns, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			continue
		}
		if times[c] == nil {
			times[c] = map[string][]float64{}
			order = append(order, c)
		}
		times[c][impl] = append(times[c][impl], ns)
	}
	fmt.Println("| cell | -cpu | keyed (AcquireInto) | keyed (Acquire, *Units) | x/sync map | keyed / map: median [range of rounds] | goal <= " + strconv.FormatFloat(*goal, 'f', -1, 64) + "x |")
	fmt.Println("|---|---|---|---|---|---|---|")
	met, all := 0, 0
	for _, c := range order {
		k, u, m := times[c]["keyed"], times[c]["keyed-units"], times[c]["xsyncmap"]
		if len(k) == 0 || len(m) == 0 {
			continue
		}
		ratio := median(k) / median(m)
		var rounds []float64
		for i := range min(len(k), len(m)) {
			rounds = append(rounds, k[i]/m[i])
		}
		ok := "yes"
		if ratio > *goal {
			ok = "**no**"
		} else {
			met++
		}
		all++
		fmt.Printf("| %s | %d | %s | %s | %s | %.2fx [%.2f–%.2f] | %s |\n", c.name, c.cpu, ns(k), ns(u), ns(m),
			ratio, slices.Min(rounds), slices.Max(rounds), ok)
	}
	fmt.Printf("\n%d of %d cells within the goal.\n", met, all)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// ns formats the median of xs and their number.
func ns(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f ns", median(xs))
}
