package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"
)

// The keyed cell: per-tenant limits across processes. keyedProcs processes
// of the bench's goroutines each take the bench's keys (1,000; 100 when
// quick) in turn (goroutine g the
// keys g, g+G, ...), one unit of a capacity of keyedCapacity per key, held
// keyedHold: "set" on one etcdsem.Set per process (one lease, one watch),
// "perkey" on one etcdsem.Semaphore per key and process made before the load
// (a lease, a watch and a goroutine each). Each run runs both, set first, on
// fresh names; it reports grants per second per process, acquire latency and
// the heap each process keeps per idle key: for a Set, what a pass over as
// many new keys leaves once they went idle, after the load (the client's
// buffers warm); for a Semaphore per key, the heap above the process's
// before the first one was made.
const (
	keyedProcs    = 4
	keyedCapacity = 4
	keyedHold     = 100 * time.Microsecond
)

// keyedRun is one run of one mode of the keyed cell.
type keyedRun struct {
	perProc   float64 // grants per second per process
	p50, p99  time.Duration
	idleBytes float64 // the heap per key once idle, median of the processes
}

func (b *bench) keyed(mode string) (keyedRun, error) {
	b.runs++
	name := fmt.Sprintf("etcdsembench/%d-%d", os.Getpid(), b.runs)
	start := time.Now().Add(6*time.Second + keyedProcs*300*time.Millisecond) // the Set's first key goes idle first
	if mode == "perkey" {
		start = start.Add(time.Duration(b.keys) * 15 * time.Millisecond) // the handles to make first
	}
	specs := make([]spec, keyedProcs)
	for i := range specs {
		specs[i] = spec{Endpoint: b.endpoint, Name: name, Mode: mode, Capacity: keyedCapacity, Goroutines: b.goroutines,
			Hold: keyedHold, Start: start, Duration: b.dur, Index: i, Keys: b.keys}
	}
	results, err := runWorkers(specs)
	if err != nil {
		return keyedRun{}, err
	}
	h := newHist()
	var grants int64
	var idle []float64
	for _, r := range results {
		h.merge(r.Latency)
		grants += r.Grants
		idle = append(idle, r.IdleBytesPerKey)
	}
	return keyedRun{perProc: float64(grants) / b.dur.Seconds() / keyedProcs, p50: h.quantile(0.5), p99: h.quantile(0.99),
		idleBytes: median(idle)}, nil
}

// printKeyed runs the keyed cell runs times and prints its table.
func (b *bench) printKeyed(out io.Writer, runs int) error {
	fmt.Fprintf(out, "\nkeyed: %d processes of %d goroutines take %d keys in turn, 1 unit of %d per key, held %v; %v per run, median of %d runs [range], a Set then a Semaphore per key in each run\n",
		keyedProcs, b.goroutines, b.keys, keyedCapacity, keyedHold, b.dur, runs)
	fmt.Fprintln(out, "\n| form | grants/s per process | p50; p99 acquire | heap per key once idle, bytes |")
	fmt.Fprintln(out, "|---|---|---|---|")
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) }
	var rate, idle [2][]float64
	var p50, p99 [2][]time.Duration
	modes := []string{"set", "perkey"}
	for range runs {
		for m, mode := range modes {
			r, err := b.keyed(mode)
			if err != nil {
				return fmt.Errorf("keyed, %s: %w", mode, err)
			}
			rate[m] = append(rate[m], r.perProc)
			p50[m] = append(p50[m], r.p50)
			p99[m] = append(p99[m], r.p99)
			idle[m] = append(idle[m], r.idleBytes)
		}
	}
	forms := []string{"one etcdsem.Set per process", "one etcdsem.Semaphore per key and process"}
	for m := range modes {
		fmt.Fprintf(out, "| %s | %s | %s; %s | %s |\n", forms[m], spread(rate[m], num), spread(p50[m], fmtDuration), spread(p99[m], fmtDuration), spread(idle[m], num))
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
