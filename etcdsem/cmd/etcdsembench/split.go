package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairsem/semaphore/etcdsem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The split: three processes of different demands load one capacity at once,
// each goroutine looping Acquire(1), a hold, Release. With splitCapacity 16
// and demands of 2, 16 and 16 goroutines, the max-min shares are 2, 7 and 7.
const (
	splitCapacity = 16
	splitBlock    = 2
	splitHold     = time.Millisecond
)

var splitDemands = []int{2, 16, 16}

// splitShares returns the max-min shares of splitCapacity among
// splitDemands: served from the smallest demand up, each gets its demand or an
// equal part of what is left, whichever is less.
func splitShares() []int64 {
	order := make([]int, len(splitDemands))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return splitDemands[i] - splitDemands[j] })
	shares := make([]int64, len(splitDemands))
	left := int64(splitCapacity)
	for k, i := range order {
		shares[i] = min(int64(splitDemands[i]), left/int64(len(order)-k))
		left -= shares[i]
	}
	return shares
}

// A splitResult is one run of the split.
type splitResult struct {
	mean      []float64     // per process: mean units held over the measured period
	near      float64       // fraction of the period's samples with every process within a unit of its share
	converged time.Duration // from the load's start to the first sample with every process within a unit of its share; -1 if none
}

// split runs the split once in mode. It samples the units each process holds
// every 10ms through a handle of its own (Stats: a process's blocks' weights
// in block mode, its holders' units in plain mode) and averages them over the
// load's second half, the measured period.
func (b *bench) split(mode string) (splitResult, error) {
	b.runs++
	name := fmt.Sprintf("etcdsembench/%d-%d", os.Getpid(), b.runs)
	start := time.Now().Add(2*time.Second + time.Duration(len(splitDemands))*300*time.Millisecond)
	specs := make([]spec, len(splitDemands))
	for i, d := range splitDemands {
		specs[i] = spec{Endpoint: b.endpoint, Name: name, Mode: mode, Capacity: splitCapacity, Block: splitBlock,
			Goroutines: d, Hold: splitHold, Start: start, Duration: b.dur, Index: i}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{b.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return splitResult{}, err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Until(start)+b.dur+time.Minute)
	defer cancel()
	probe, err := etcdsem.New(ctx, cli, name, etcdsem.WithCapacity(splitCapacity), etcdsem.WithClientName("probe"))
	if err != nil {
		return splitResult{}, err
	}
	defer probe.Close()

	samples := make(chan splitSamples, 1)
	go func() { samples <- sampleUnits(ctx, probe, start, b.dur, len(splitDemands), splitCapacity) }()
	_, err = runWorkers(specs)
	if err != nil {
		cancel() // the sampler stops at its next Stats
	}
	got := <-samples
	if err != nil {
		return splitResult{}, err
	}
	if got.err != nil {
		return splitResult{}, got.err
	}
	return got.judge(start, start.Add(b.dur/2), splitShares()), nil
}

// splitSamples is the units each process held, by worker index, at each
// sample's time.
type splitSamples struct {
	at    []time.Time
	units [][]int64
	err   error
}

// sampleUnits samples, every 10ms from start for d, the units each of procs
// worker processes holds of a semaphore of the given capacity, through
// probe's Stats.
func sampleUnits(ctx context.Context, probe *etcdsem.Semaphore, start time.Time, d time.Duration, procs int, capacity int64) splitSamples {
	var out splitSamples
	select {
	case <-time.After(time.Until(start)):
	case <-ctx.Done():
		out.err = ctx.Err()
		return out
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for now := time.Now(); now.Before(start.Add(d)); now = <-tick.C {
		st, err := probe.Stats(ctx)
		if err != nil {
			out.err = err
			return out
		}
		if st.Held > capacity {
			out.err = fmt.Errorf("%d units held, more than the capacity %d", st.Held, capacity)
			return out
		}
		units := make([]int64, procs)
		for _, e := range st.Holders {
			idx, ok := strings.CutPrefix(e.Client, "worker-")
			i, err := strconv.Atoi(idx)
			if !ok || err != nil || i < 0 || i >= len(units) {
				out.err = fmt.Errorf("a holder of unknown client %q", e.Client)
				return out
			}
			units[i] += e.Units
		}
		out.at = append(out.at, time.Now())
		out.units = append(out.units, units)
	}
	return out
}

// judge returns the run's result: the means and the fraction near the shares
// over the samples from measured on, and the first sample near them.
func (ss splitSamples) judge(start, measured time.Time, shares []int64) splitResult {
	res := splitResult{mean: make([]float64, len(shares)), converged: -1}
	var n, near int
	for k, units := range ss.units {
		ok := true
		for i, u := range units {
			ok = ok && u >= shares[i]-1 && u <= shares[i]+1
		}
		if ok && res.converged < 0 {
			res.converged = ss.at[k].Sub(start)
		}
		if ss.at[k].Before(measured) {
			continue
		}
		n++
		if ok {
			near++
		}
		for i, u := range units {
			res.mean[i] += float64(u)
		}
	}
	if n > 0 {
		for i := range res.mean {
			res.mean[i] /= float64(n)
		}
		res.near = float64(near) / float64(n)
	}
	return res
}

// printSplit runs the split in each of modes and prints its table.
func (b *bench) printSplit(out io.Writer, runs int, modes []string) error {
	shares := splitShares()
	fmt.Fprintf(out, "\nsplit (capacity %d, block size %d, %v holds): processes of %v goroutines load it at once; max-min shares %v\n",
		splitCapacity, splitBlock, splitHold, splitDemands, shares)
	fmt.Fprintf(out, "units held: a process's blocks' weights in block mode, its holders' in plain mode; mean over the load's second half\n")
	head, rule := "\n| mode |", "|---|"
	for i, d := range splitDemands {
		head += fmt.Sprintf(" process %d: %d goroutines, share %d |", i, d, shares[i])
		rule += "---|"
	}
	fmt.Fprintln(out, head+" samples with every process within a unit of its share | first such sample after |")
	fmt.Fprintln(out, rule+"---|---|")
	for _, mode := range modes {
		var rs []splitResult
		for range runs {
			r, err := b.split(mode)
			if err != nil {
				return fmt.Errorf("split, %s: %w", mode, err)
			}
			rs = append(rs, r)
		}
		row := "| " + mode + " |"
		for i := range splitDemands {
			var means []float64
			for _, r := range rs {
				means = append(means, r.mean[i])
			}
			row += " " + spread(means, func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }) + " |"
		}
		var nears []float64
		var convs []time.Duration
		for _, r := range rs {
			nears = append(nears, 100*r.near)
			convs = append(convs, r.converged)
		}
		fmt.Fprintf(out, "%s %s | %s |\n", row,
			spread(nears, func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + "%" }),
			spread(convs, func(d time.Duration) string {
				if d < 0 {
					return "never"
				}
				return fmtDuration(d)
			}))
	}
	return nil
}
