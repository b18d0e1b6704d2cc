// Command workloads shows what splitting one memory budget between workloads
// buys. Two workloads share a server: a steady one (a fixed rate of small
// requests, well within its part of the memory) and a bursty one (idle, then
// hundreds of requests at once, every half second). The same arrivals are served
// twice:
//
//   - by one admission.Controller over the whole budget, both workloads in its
//     one FIFO queue;
//   - by an admission.Group with a member per workload at equal shares, half of
//     the memory kept as a shared pool.
//
// With one controller every burst fills the queue and the steady requests wait
// behind it. In the group the steady workload's share is its own, so its
// requests are admitted at once, while the bursty workload borrows the pool
// (memory nobody else is using) on top of its share to get through its bursts.
// For each setup the command prints, per workload, the requests served and
// their latency percentiles (queueing plus service), and for the group how much
// the bursty workload borrowed at most. Every request is served: nothing has a
// deadline here.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fairsem/semaphore/admission"
)

const (
	totalMemory = 4 << 20 // the budget
	countLimit  = 64      // requests running at once, per controller (per member in the group)
	poolShare   = 0.5     // in the group: half of the budget is the shared pool

	cost    = 64 << 10              // memory a request holds while it runs
	service = 20 * time.Millisecond // how long it runs

	steadyRate = 200 // steady requests per second: about 256K held on average
	burstSize  = 300 // bursty requests per burst
	burstEvery = 500 * time.Millisecond
)

// load is how long arrivals go on.
type load struct{ duration time.Duration }

// result is what one workload saw in one setup.
type result struct {
	setup, workload string
	offered, served int
	latencies       []time.Duration
	peakBorrowed    int64 // in the group: the most the workload held from the pool
}

func main() {
	if _, err := run(os.Stdout, load{duration: 2 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves the same arrivals with one controller and with a group, prints what
// each workload saw, and fails if any controller did not get everything back.
func run(w io.Writer, l load) ([]result, error) {
	var out []result

	one := admission.New(admission.Resources{Count: countLimit, Memory: totalMemory}, admission.WithName("shared"))
	rs := serve(l, "one controller", one, one, nil)
	out = append(out, rs...)
	if err := drained(one.Stats()); err != nil {
		return nil, err
	}

	g := admission.NewGroup(admission.Resources{Count: countLimit, Memory: totalMemory}, admission.WithName("server"),
		admission.WithSharedPool(poolShare))
	steady, bursty := g.Add("steady", 1), g.Add("bursty", 1)
	rs = serve(l, "group", steady, bursty, g)
	out = append(out, rs...)
	st := g.Stats()
	if st.Borrowed != 0 {
		return nil, fmt.Errorf("group: %d bytes still lent", st.Borrowed)
	}
	for _, m := range st.Members {
		if err := drained(m.Stats); err != nil {
			return nil, err
		}
	}

	for _, setup := range []string{"one controller", "group"} {
		fmt.Fprintf(w, "== %s\n", setup)
		for _, r := range out {
			if r.setup != setup {
				continue
			}
			fmt.Fprintf(w, "%-7s served %4d/%-4d latency p50 %6v p99 %6v max %6v", r.workload, r.served, r.offered,
				pct(r.latencies, 0.50), pct(r.latencies, 0.99), pct(r.latencies, 1))
			if setup == "group" && r.workload == "bursty" {
				fmt.Fprintf(w, "  borrowed at most %dK of the %dK pool", r.peakBorrowed>>10, st.Pool>>10)
			}
			fmt.Fprintln(w)
		}
	}
	return out, nil
}

func drained(st admission.Stats) error {
	if !st.Held.IsZero() || st.CurrentPermits != 0 {
		return fmt.Errorf("%s: %v still held by %d permits", st.Name, st.Held, st.CurrentPermits)
	}
	return nil
}

// serve offers both workloads' arrivals to their controllers (the same one, or
// two members of g) and waits for every request to finish.
func serve(l load, setup string, steadyC, burstyC *admission.Controller, g *admission.Group) []result {
	steady := &result{setup: setup, workload: "steady"}
	bursty := &result{setup: setup, workload: "bursty"}
	var mu sync.Mutex
	var wg sync.WaitGroup
	request := func(c *admission.Controller, r *result) {
		arrived := time.Now()
		mu.Lock()
		r.offered++
		mu.Unlock()
		wg.Go(func() {
			p, err := c.Acquire(context.Background(), r.workload, cost)
			if err != nil {
				panic(err) // no deadline, no queue bound: admission cannot fail here
			}
			var borrowed int64
			if g != nil {
				borrowed = c.Stats().Borrowed
			}
			time.Sleep(service)
			p.Release()
			mu.Lock()
			r.served++
			r.latencies = append(r.latencies, time.Since(arrived))
			r.peakBorrowed = max(r.peakBorrowed, borrowed)
			mu.Unlock()
		})
	}

	start := time.Now()
	var arrivals sync.WaitGroup
	arrivals.Go(func() { // steady: evenly spaced
		tick := time.NewTicker(time.Second / steadyRate)
		defer tick.Stop()
		for now := range tick.C {
			if now.Sub(start) >= l.duration {
				return
			}
			request(steadyC, steady)
		}
	})
	arrivals.Go(func() { // bursty: all at once, from the first tick on
		tick := time.NewTicker(burstEvery)
		defer tick.Stop()
		for now := range tick.C {
			if now.Sub(start) >= l.duration {
				return
			}
			for range burstSize {
				request(burstyC, bursty)
			}
		}
	})
	arrivals.Wait()
	wg.Wait()
	return []result{*steady, *bursty}
}

// pct returns the q-quantile of ds (q = 1: the maximum), rounded to 0.1 ms.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := min(len(s)-1, int(q*float64(len(s))))
	return s[i].Round(100 * time.Microsecond)
}
