// Command fairtenants runs three tenants against a backend whose capacity
// drops to a third mid-run and comes back, through one keyed set: a hard limit
// on the whole (WithLimit) that follows the capacity it measures, shared by
// weight among the tenants that want it, with a per-tenant maximum. Every
// quarter of a second it prints the backend's capacity, the limit found, and
// the units each tenant holds. It exits after 4.5s.
//
// The limit is moved by Set.Resize from a measured signal, by Little's law:
// every 100ms it becomes 1.1 times the requests completed per second times the
// backend's latency without load, plus one, so that it settles just above what
// the backend serves at once and grows by a tenth and one per step while the
// backend keeps up. Anything with a settable limit can drive it the same way, such as a
// Limiter of the adaptive package (adaptive.New(set, alg)).
//
// The backend serves up to its capacity at 40ms; past it, the requests share
// it and each takes longer (processor sharing). Every tenant asks for more than
// the backend serves: gold (weight 3) may hold at most 20 units, silver
// (weight 1) 18, trial (weight 1) 2. Units held are never
// taken back: right after the limit shrinks, the tenants hold more than it
// until their calls end.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore/keyed"
)

const (
	base = 40 * time.Millisecond
	full = 24 // the backend's capacity, before and after the drop
)

// load is how long each of the three phases (full, a third, full again)
// lasts; a row is printed every sixth of a phase, the limit moves every
// fifteenth, and a call waits at most a fifth.
type load struct{ phase time.Duration }

// result is what one run counted.
type result struct {
	attempts int64            // calls to Acquire
	peakHeld map[string]int64 // the most units each tenant held in a printed row
	set      keyed.Stats      // once every call has ended
}

type tenant struct {
	name     string
	weight   int64
	capacity int64 // the tenant's maximum
}

var tenants = []tenant{{"gold", 3, 20}, {"silver", 1, 18}, {"trial", 1, 2}}

func main() {
	if _, err := run(os.Stdout, load{phase: 1500 * time.Millisecond}); err != nil {
		fmt.Fprintln(os.Stderr, "fairtenants:", err)
		os.Exit(1)
	}
}

// backend is processor sharing with a capacity that changes.
type backend struct {
	capacity atomic.Int64
	inFlight atomic.Int64
}

func (b *backend) serve(ctx context.Context) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	d := base
	if c := b.capacity.Load(); n > c {
		d = time.Duration(int64(base) * n / c)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

func of(f func(tenant) int64) func(string) int64 {
	return func(name string) int64 {
		for _, t := range tenants {
			if t.name == name {
				return f(t)
			}
		}
		return 0
	}
}

// run drives the load through the three phases, prints a row every sixth of a
// phase and the counters at the end, and returns what it counted.
func run(out io.Writer, ld load) (result, error) {
	phaseLen, tick := ld.phase, ld.phase/6
	be := &backend{}
	be.capacity.Store(full)
	set := keyed.New(0, keyed.WithName("tenants"), keyed.WithLimit(full),
		keyed.WithCapacityFunc(of(func(t tenant) int64 { return t.capacity })),
		keyed.WithWeightFunc(of(func(t tenant) int64 { return t.weight })))
	var completed, attempts atomic.Int64

	ctx, cancel := context.WithTimeout(context.Background(), 3*phaseLen)
	defer cancel()
	var wg sync.WaitGroup
	for i, t := range tenants {
		wg.Go(func() { // Poisson arrivals at what the full backend serves, per tenant
			rate := full / base.Seconds()
			r := rand.New(rand.NewPCG(1, uint64(i)))
			for next := time.Now(); ctx.Err() == nil; {
				next = next.Add(time.Duration(r.ExpFloat64() / rate * float64(time.Second)))
				time.Sleep(time.Until(next))
				attempts.Add(1)
				wg.Go(func() {
					wait, wcancel := context.WithTimeout(ctx, phaseLen/5)
					u, err := set.Acquire(wait, t.name, 1)
					wcancel()
					if err != nil {
						return // timed out waiting: the tenant asks for more than it gets
					}
					defer u.Release()
					be.serve(ctx)
					completed.Add(1)
				})
			}
		})
	}

	wg.Go(func() { // the limit: 1.1 x throughput x latency without load, + 1
		t := time.NewTicker(phaseLen / 15)
		defer t.Stop()
		last := time.Now()
		for ctx.Err() == nil {
			now := <-t.C
			perSecond := float64(completed.Swap(0)) / now.Sub(last).Seconds()
			last = now
			set.Resize(int64(1.1*perSecond*base.Seconds()) + 1)
		}
	})

	fmt.Fprintln(out, "time  capacity  limit  gold  silver  trial   (units held; weights 3:1:1; at most 20, 18, 2)")
	start := time.Now()
	peak := map[string]int64{}
	t := time.NewTicker(tick)
	defer t.Stop()
	for range t.C {
		at := time.Since(start)
		if at > 3*phaseLen {
			break
		}
		switch at / phaseLen { // full, a third, full again
		case 1:
			be.capacity.Store(full / 3)
		default:
			be.capacity.Store(full)
		}
		limit, _ := set.Limit()
		held := make([]int64, len(tenants))
		for i, tn := range tenants {
			held[i] = set.KeyStats(tn.name).Held
			peak[tn.name] = max(peak[tn.name], held[i])
		}
		fmt.Fprintf(out, "%4.2fs  %8d  %5d  %4d  %6d  %5d\n", at.Seconds(), be.capacity.Load(), limit,
			held[0], held[1], held[2])
	}
	cancel()
	wg.Wait()
	st := set.Stats()
	fmt.Fprintf(out, "served %d, timed out waiting %d\n", st.Acquired, st.TimedOut)
	return result{attempts: attempts.Load(), peakHeld: peak, set: st}, nil
}
