// Command adaptive compares adaptive concurrency limits on a simulated backend
// whose capacity steps: static limits (the best in hindsight per phase among
// several), this module's AIMD, Vegas and Gradient2 (with FIFO waiting, and
// with the standing-queue policy), and failsafe-go's adaptivelimiter (with its
// defaults and tuned). All strategies run in the same process at the same time,
// each on its own copy of the backend, fed the same open-loop arrivals.
//
// Time is simulated: each run happens in a testing/synctest bubble, where the
// clock advances only when every goroutine is blocked, so the numbers do not
// depend on the machine's speed or load (a 30s run takes a few seconds of CPU),
// and the latencies are the backend's and the queues', free of scheduler noise.
// What the bubble cannot show is the limiters' own CPU cost, which the
// package's benchmarks measure.
//
//	go run . -runs 3 -png chart.png   # 4 phases of 7.5s: 30s a run; the chart of run 1
//	go run . -quick                   # 4 phases of 2s, for CI; writes no file
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type phase struct {
	capacity int           // calls the backend serves at base latency
	base     time.Duration // latency at or under capacity
}

// The backend's capacity steps 32 -> 8 -> 32, then its base latency doubles.
var phases = []phase{{32, 20 * time.Millisecond}, {8, 20 * time.Millisecond}, {32, 20 * time.Millisecond}, {32, 40 * time.Millisecond}}

const bucket = 100 * time.Millisecond

var (
	quick    = flag.Bool("quick", false, "phases of 2s instead of 7.5s")
	runs     = flag.Int("runs", 3, "runs; the table shows medians and ranges")
	rate     = flag.Float64("rate", 1200, "arrivals per second (Poisson)")
	deadline = flag.Duration("deadline", 250*time.Millisecond, "each request's deadline, from its arrival")
	pngPath  = flag.String("png", "", "write the limit and p99 over time of every strategy in the first run to this PNG file")
	only     = flag.String("only", "", "run only the strategies whose name starts with this")
)

// main runs the comparison as the one test of a test main, because a synctest
// bubble needs a *testing.T.
func main() {
	testing.Main(func(string, string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "Compare", F: compare}}, nil, nil)
}

func compare(t *testing.T) {
	phaseLen := 7500 * time.Millisecond
	if *quick {
		phaseLen = 2 * time.Second
	}
	all := strategies()
	if *only != "" {
		all = slices.DeleteFunc(all, func(s namedStrategy) bool { return len(s.name) < len(*only) || s.name[:len(*only)] != *only })
	}
	fmt.Printf("backend: capacity %v, base latency %v per phase of %v; %.0f arrivals/s (Poisson); deadline %v; %d runs\n",
		caps(), bases(), phaseLen, *rate, *deadline, *runs)
	var results [][]result // [run][strategy]
	for r := range *runs {
		synctest.Test(t, func(*testing.T) { results = append(results, run(all, phaseLen, uint64(r+1))) })
		fmt.Fprintf(os.Stderr, "run %d done\n", r+1)
	}
	report(os.Stdout, all, results, phaseLen)
	if *pngPath != "" {
		if err := chart(*pngPath, all, results[0], phaseLen); err != nil {
			t.Fatal(err)
		}
	}
}

// result is what one strategy did in one run.
type result struct {
	served   []int             // per bucket, by completion: requests answered within their deadline
	latency  [][]time.Duration // per phase, by arrival: served requests' latency from arrival
	p99      []time.Duration   // per bucket, by completion
	limits   []int             // per bucket: the limit at its end
	refused  int               // never admitted
	timedOut int               // admitted, not answered within the deadline
}

// backend is one copy of the simulated backend: a call's latency is the
// phase's base latency, times in-flight/capacity when more than capacity
// calls are in flight at its start. A call whose caller gives up (its deadline
// passes) leaves the backend at once, as a server that honours cancellation
// does.
type backend struct {
	inFlight atomic.Int64
	start    time.Time
	phaseLen time.Duration
}

func (b *backend) call(ctx context.Context) error {
	n := b.inFlight.Add(1)
	p := phaseAt(time.Since(b.start), b.phaseLen)
	d := p.base
	if n > int64(p.capacity) {
		d = time.Duration(float64(p.base) * float64(n) / float64(p.capacity))
	}
	t := time.NewTimer(d)
	defer b.inFlight.Add(-1)
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

func phaseAt(t, phaseLen time.Duration) phase {
	return phases[min(int(t/phaseLen), len(phases)-1)]
}

// run runs every strategy at once on the same arrivals.
func run(all []namedStrategy, phaseLen time.Duration, seed uint64) []result {
	total := phaseLen * time.Duration(len(phases))
	nb := int(total / bucket)
	type rec struct {
		mu sync.Mutex
		result
		lat [][]time.Duration // per bucket, served latencies
	}
	recs := make([]*rec, len(all))
	strats := make([]strategy, len(all))
	backends := make([]*backend, len(all))
	start := time.Now()
	for i, s := range all {
		recs[i] = &rec{result: result{served: make([]int, nb), latency: make([][]time.Duration, len(phases)),
			p99: make([]time.Duration, nb), limits: make([]int, nb)}, lat: make([][]time.Duration, nb)}
		strats[i] = s.make()
		backends[i] = &backend{start: start, phaseLen: phaseLen}
	}
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() { // the limit at the end of each bucket
		defer sampler.Done()
		t := time.NewTicker(bucket)
		defer t.Stop()
		for k := 0; k < nb; k++ {
			select {
			case <-t.C:
			case <-stop:
				return
			}
			for i := range all {
				recs[i].limits[k] = strats[i].limit()
			}
		}
	}()
	var wg sync.WaitGroup
	r := rand.New(rand.NewPCG(seed, 42))
	for at := time.Duration(0); at < total; at += time.Duration(r.ExpFloat64() / *rate * float64(time.Second)) {
		arrival := start.Add(at)
		if d := time.Until(arrival); d > 0 {
			time.Sleep(d)
		}
		for i := range all {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithDeadline(context.Background(), arrival.Add(*deadline))
				defer cancel()
				admitted, err := strats[i].do(ctx, backends[i].call)
				end := time.Now()
				lat := end.Sub(arrival)
				rc := recs[i]
				rc.mu.Lock()
				defer rc.mu.Unlock()
				switch {
				case !admitted:
					rc.refused++
				case err != nil || lat > *deadline:
					rc.timedOut++
				default:
					if k := int(end.Sub(start) / bucket); k < nb {
						rc.served[k]++
						rc.lat[k] = append(rc.lat[k], lat)
					}
					p := min(int(arrival.Sub(start)/phaseLen), len(phases)-1)
					rc.latency[p] = append(rc.latency[p], lat)
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	out := make([]result, len(all))
	for i, rc := range recs {
		for k, l := range rc.lat {
			rc.p99[k] = quantile(l, 0.99)
		}
		out[i] = rc.result
	}
	return out
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func caps() []int {
	var c []int
	for _, p := range phases {
		c = append(c, p.capacity)
	}
	return c
}

func bases() []time.Duration {
	var b []time.Duration
	for _, p := range phases {
		b = append(b, p.base)
	}
	return b
}

func itoa(n int) string { return strconv.Itoa(n) }
