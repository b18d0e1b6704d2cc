package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/fairsem/semaphore/etcdsem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The contended cells: demand above the capacity. Each process runs 16
// goroutines looping Acquire(1), a hold, Release, on a capacity of 8 units
// per process (4 processes on 32, 8 on 64), so each wants 16 units and its
// max-min share is 8; block mode takes blocks of contendedBlock units. Each
// run of a cell runs plain mode, then block mode, on fresh semaphores, and
// measures grants per second and acquire latency (p50, p99) over the load;
// the units each process holds, sampled every 10ms through Stats over the
// load's second half (its blocks' weights in block mode, its holders' units
// in plain mode), against its share; and the violations Audit finds in
// etcd's history of the semaphore.
var contendedCells = []struct {
	procs    int
	capacity int64
}{{4, 32}, {8, 64}}

const contendedBlock = 4

// contendedShare is each process's max-min share in a contended cell: the
// capacity split evenly among processes that each want more.
func contendedShare(procs int, capacity int64) int64 { return capacity / int64(procs) }

// A contendedResult is one run of one mode of a contended cell.
type contendedResult struct {
	load       loadResult
	near       float64 // fraction of the samples with every process within a block of its share
	gap        int64   // the farthest a process was from its share in a sample
	violations int     // Audit's
}

// contended runs the cell c once, in c's mode.
func (b *bench) contended(c config) (contendedResult, error) {
	b.runs++
	name := fmt.Sprintf("etcdsembench/%d-%d", os.Getpid(), b.runs)
	start := time.Now().Add(2*time.Second + time.Duration(c.procs)*300*time.Millisecond)
	specs := make([]spec, c.procs)
	for i := range specs {
		specs[i] = spec{Endpoint: b.endpoint, Name: name, Mode: c.mode, Capacity: c.capacity, Block: contendedBlock,
			Goroutines: b.goroutines, Hold: c.hold, Start: start, Duration: b.dur, Index: i}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{b.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return contendedResult{}, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Until(start)+b.dur+time.Minute)
	defer cancel()
	probe, err := etcdsem.New(ctx, cli, name, etcdsem.WithCapacity(c.capacity), etcdsem.WithClientName("probe"))
	if err != nil {
		return contendedResult{}, err
	}
	defer probe.Close()

	samples := make(chan splitSamples, 1)
	go func() { samples <- sampleUnits(ctx, probe, start, b.dur, c.procs, c.capacity) }()
	results, err := runWorkers(specs)
	if err != nil {
		cancel() // the sampler stops at its next Stats
	}
	got := <-samples
	if err != nil {
		return contendedResult{}, err
	}
	if got.err != nil {
		return contendedResult{}, got.err
	}
	h := newHist()
	var grants int64
	for _, r := range results {
		h.merge(r.Latency)
		grants += r.Grants
	}
	res := contendedResult{load: loadResult{rate: float64(grants) / b.dur.Seconds(), p50: h.quantile(0.5), p99: h.quantile(0.99)}}
	res.near, res.gap = got.nearShares(start.Add(b.dur/2), contendedShare(c.procs, c.capacity), contendedBlock)
	rep, err := etcdsem.Audit(ctx, cli, name)
	if err != nil {
		return contendedResult{}, fmt.Errorf("audit: %w", err)
	}
	res.violations = len(rep.Violations)
	return res, nil
}

// nearShares judges the samples from measured on, every process's share
// being share: the fraction of them with every process within block units of
// it, and the farthest any process was from it.
func (ss splitSamples) nearShares(measured time.Time, share, block int64) (near float64, gap int64) {
	var n, ok int
	for k, units := range ss.units {
		if ss.at[k].Before(measured) {
			continue
		}
		n++
		within := true
		for _, u := range units {
			d := max(u-share, share-u)
			gap = max(gap, d)
			within = within && d <= block
		}
		if within {
			ok++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(ok) / float64(n), gap
}

// printContended runs the contended cells at each of holds, runs times each,
// plain and block mode in every run, and prints their table.
func (b *bench) printContended(out io.Writer, runs int, holds []time.Duration) error {
	fmt.Fprintf(out, "\ncontended: each process's %d goroutines want a unit each, on a capacity of 8 units per process (max-min share 8 each); blocks of %d units; %v per run, median of %d runs [range], plain then blocks in each run\n",
		b.goroutines, contendedBlock, b.dur, runs)
	fmt.Fprintln(out, "\n| processes | capacity | hold | plain: grants/s | blocks: grants/s | blocks / plain | plain: p50; p99 acquire | blocks: p50; p99 acquire | samples with every process within a block of its share: plain; blocks | farthest from a share, units: plain; blocks | violations: plain; blocks |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|")
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) }
	ratio := func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
	pct := func(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) + "%" }
	units := func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) }
	for _, cell := range contendedCells {
		for _, hold := range holds {
			var rates, ratios, nears, gaps [2][]float64
			var p50s, p99s [2][]time.Duration
			var violations [2]int
			for range runs {
				for m, mode := range []string{"plain", "blocks"} {
					r, err := b.contended(config{procs: cell.procs, capacity: cell.capacity, hold: hold, mode: mode})
					if err != nil {
						return fmt.Errorf("contended, %d processes, capacity %d, hold %v, %s: %w", cell.procs, cell.capacity, hold, mode, err)
					}
					rates[m] = append(rates[m], r.load.rate)
					p50s[m] = append(p50s[m], r.load.p50)
					p99s[m] = append(p99s[m], r.load.p99)
					nears[m] = append(nears[m], r.near)
					gaps[m] = append(gaps[m], float64(r.gap))
					violations[m] += r.violations
				}
				ratios[0] = append(ratios[0], rates[1][len(rates[1])-1]/rates[0][len(rates[0])-1])
			}
			fmt.Fprintf(out, "| %d | %d | %v | %s | %s | %s | %s; %s | %s; %s | %s; %s | %s; %s | %d; %d |\n",
				cell.procs, cell.capacity, hold, spread(rates[0], num), spread(rates[1], num), spread(ratios[0], ratio),
				spread(p50s[0], fmtDuration), spread(p99s[0], fmtDuration), spread(p50s[1], fmtDuration), spread(p99s[1], fmtDuration),
				spread(nears[0], pct), spread(nears[1], pct), spread(gaps[0], units), spread(gaps[1], units),
				violations[0], violations[1])
		}
	}
	return nil
}
