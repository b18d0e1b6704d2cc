// Command pertenant shows what per-tenant limits buy a server shared by tenants
// of very different appetites. Three heavy tenants send far more requests than
// the server can run, fifty light ones send a few each; arrivals are open-loop
// (a schedule fixed in advance, as clients that do not wait for each other), and
// every request gives up after a deadline. The same arrivals are served twice:
//
//   - with a global limit alone: one semaphore of 16 units, one FIFO queue for
//     everybody;
//   - with per-tenant limits on top of it: a keyed.Set of 4 units per tenant
//     sharing the same global semaphore.
//
// With the global limit alone the heavy tenants' backlog fills the one queue and
// every light request waits behind it, until its deadline. With per-tenant
// limits each heavy tenant's backlog waits at its own key, at most 4 of its
// requests reach the global semaphore, and the light tenants find it nearly
// free. The command prints, for light and heavy tenants, the requests served and
// failed and the latency percentiles of all requests (queueing plus service;
// a failed request counts the time until it gave up).
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

const (
	globalLimit = 16 // requests running at once on the server
	tenantLimit = 4  // with per-tenant limits: requests running or queued globally, per tenant

	service  = 5 * time.Millisecond   // how long a request runs: the server serves 3,200 per second
	deadline = 300 * time.Millisecond // a request gives up after this long

	heavyTenants = 3
	heavyRate    = 1200 // requests per second, per heavy tenant: 3,600 in all, more than the server can run
	lightTenants = 50
	lightRate    = 8 // requests per second, per light tenant: 400 in all
)

// load is how long arrivals go on.
type load struct{ duration time.Duration }

// arrival is one request of the schedule.
type arrival struct {
	at     time.Duration // from the start
	tenant string
	heavy  bool
}

// result is what one class of tenants saw in one setup.
type result struct {
	setup, class    string
	offered, served int
	failed          int
	latencies       []time.Duration
}

func main() {
	if _, err := run(os.Stdout, load{duration: 2 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves the same arrivals in both setups, prints the table, and fails if a
// setup did not get every unit back.
func run(w io.Writer, l load) ([]result, error) {
	arrivals := schedule(l)
	var out []result

	global := semaphore.New(globalLimit, semaphore.WithName("server"))
	out = append(out, serve(arrivals, "global limit only", func(ctx context.Context, _ string) (func(), error) {
		if err := global.Acquire(ctx, 1); err != nil {
			return nil, err
		}
		return func() { global.Release(1) }, nil
	})...)
	if global.Available() != globalLimit {
		return nil, fmt.Errorf("global limit only: %v", global)
	}

	global = semaphore.New(globalLimit, semaphore.WithName("server"))
	tenants := keyed.New(tenantLimit, keyed.WithName("tenants"), keyed.WithGlobal(global))
	out = append(out, serve(arrivals, "per-tenant + global", func(ctx context.Context, tenant string) (func(), error) {
		u, err := tenants.Acquire(ctx, tenant, 1)
		return u.Release, err
	})...)
	if st := tenants.Stats(); st.Keys != 0 || global.Available() != globalLimit {
		return nil, fmt.Errorf("per-tenant + global: %d tenants still active, %v", st.Keys, global)
	}

	fmt.Fprintf(w, "%d heavy tenants at %d req/s each, %d light at %d req/s each; server runs %d at once for %v each; deadline %v\n\n",
		heavyTenants, heavyRate, lightTenants, lightRate, globalLimit, service, deadline)
	fmt.Fprintf(w, "%-20s %-6s %7s %7s %7s %9s %9s\n", "setup", "class", "offered", "served", "failed", "p50", "p99")
	for _, r := range out {
		fmt.Fprintf(w, "%-20s %-6s %7d %7d %7d %9v %9v\n", r.setup, r.class, r.offered, r.served, r.failed,
			pct(r.latencies, 0.50), pct(r.latencies, 0.99))
	}
	return out, nil
}

// schedule draws the arrivals: each tenant's requests at exponential intervals
// (a Poisson process), from a fixed seed so both setups see the same ones.
func schedule(l load) []arrival {
	r := rand.New(rand.NewPCG(1, 2))
	var as []arrival
	add := func(tenant string, rate float64, heavy bool) {
		for t := time.Duration(r.ExpFloat64() / rate * float64(time.Second)); t < l.duration; t += time.Duration(r.ExpFloat64() / rate * float64(time.Second)) {
			as = append(as, arrival{at: t, tenant: tenant, heavy: heavy})
		}
	}
	for i := range heavyTenants {
		add("heavy-"+strconv.Itoa(i), heavyRate, true)
	}
	for i := range lightTenants {
		add("light-"+strconv.Itoa(i), lightRate, false)
	}
	slices.SortFunc(as, func(a, b arrival) int { return int(a.at - b.at) })
	return as
}

// serve offers the arrivals on schedule, each on its own goroutine that
// acquires with its deadline, runs for the service time and releases, and waits
// for every request to finish.
func serve(arrivals []arrival, setup string, acquire func(ctx context.Context, tenant string) (release func(), err error)) []result {
	light := &result{setup: setup, class: "light"}
	heavy := &result{setup: setup, class: "heavy"}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for _, a := range arrivals {
		if d := time.Until(start.Add(a.at)); d > 0 {
			time.Sleep(d) // open loop: the schedule, not the server, decides when requests come
		}
		r := light
		if a.heavy {
			r = heavy
		}
		wg.Go(func() {
			arrived := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			release, err := acquire(ctx, a.tenant)
			if err == nil {
				time.Sleep(service) // the request's work
				release()
			}
			mu.Lock()
			defer mu.Unlock()
			r.offered++
			if err != nil {
				r.failed++
			} else {
				r.served++
			}
			r.latencies = append(r.latencies, time.Since(arrived))
		})
	}
	wg.Wait()
	return []result{*light, *heavy}
}

// pct returns the q-quantile of ds, rounded to 0.1 ms.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := min(len(s)-1, int(q*float64(len(s))))
	return s[i].Round(100 * time.Microsecond)
}
