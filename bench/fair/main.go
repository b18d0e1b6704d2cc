// Command fair measures how a global concurrency limit is shared among tenants
// of different weights and demands, in real time, with these limiters: a
// global limit only (golang.org/x/sync/semaphore), per-tenant caps under a
// global semaphore (keyed with WithGlobal), and keyed's fair limit (WithLimit,
// WithWeightFunc, WithGuaranteeFunc), without caps per tenant (NoKeyLimit) and
// with caps of half the limit, whose calls then wait at their tenant's own
// level when the cap binds. Each tenant sends open-loop Poisson
// arrivals; each request holds its units (one, unless the scenario says) for
// the service time.
//
// Six scenarios, each run with every limiter in turn:
//
//   - equal: four tenants of weight 1, one sending ten times the others' load,
//     all asking for more than a quarter of the limit;
//   - weighted: two tenants of weights 1 and 4, both asking for more than their
//     shares;
//   - light: a backlogged tenant and a light one (a twentieth of the limit),
//     and the light one alone, for its latency;
//   - return: an owner with a guarantee of half the limit, idle for the first
//     half of the run, and a backlogged tenant throughout;
//   - mixed: four tenants of weight 1 asking for more than their shares, three
//     with requests of 1 to 8 units and one with requests of 1, for each one's
//     share of the units held over time;
//   - mixedlight: a limit of 32, service times from half to one and a half
//     times the service time; a backlogged tenant and a light one (a fifth of
//     the limit), both with requests of 1 to 8 units, and the light one alone,
//     for its latency.
//
// A backend counts the units in service independently of the limiters and
// checks the limit at every grant. A fifth limiter, a reference, runs the fair
// limit's order (weighted fair queuing over units granted, a FIFO line per
// tenant) as plainly as possible under one mutex, without a level per tenant:
// what the policy gives, apart from how keyed implements it.
//
//	go run . -runs 3 -png chart.png   # 4s per scenario and limiter: about 2 minutes
//	go run . -quick                   # 1 run of 1s each, for CI; writes no file
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

var (
	quick    = flag.Bool("quick", false, "1 run of 1s per scenario and limiter")
	runs     = flag.Int("runs", 3, "runs; the tables show medians and ranges")
	length   = flag.Duration("for", 4*time.Second, "length of each scenario, per limiter")
	pngPath  = flag.String("png", "", "write each tenant's units held over time in the weighted and return scenarios of the first run to this PNG file")
	limitN   = flag.Int64("limit", 8, "the global limit, in units")
	service  = flag.Duration("service", 20*time.Millisecond, "each request's service time")
	deadline = flag.Duration("deadline", 300*time.Millisecond, "each request's deadline, from its arrival")
	only     = flag.String("only", "", "run only the scenarios whose names match this regular expression")
)

// A tenant of a scenario.
type tenant struct {
	name      string
	weight    int64
	guarantee int64
	load      float64 // arrivals per second, as a multiple of what the limit serves (limit/service)
	from      float64 // starts sending at this fraction of the run
	backlog   bool    // asks for more than its fair share: its share is checked
	burst     int     // requests sent at once when it starts
	sizes     int64   // each request asks for 1 to sizes units, uniformly; 0 means 1
}

type scenario struct {
	name    string
	tenants []tenant
	alone   string  // a tenant also run alone, for its latency
	limit   int64   // the limit; 0: -limit
	jitter  float64 // service times are uniform in [service × (1 - jitter), service × (1 + jitter)]
}

// limitOf is the scenario's limit.
func (sc scenario) limitOf() int64 {
	if sc.limit > 0 {
		return sc.limit
	}
	return *limitN
}

func scenarios() []scenario {
	return []scenario{
		{name: "equal", tenants: []tenant{
			{name: "heavy", weight: 1, load: 4, backlog: true},
			{name: "t1", weight: 1, load: 0.4, backlog: true},
			{name: "t2", weight: 1, load: 0.4, backlog: true},
			{name: "t3", weight: 1, load: 0.4, backlog: true},
		}},
		{name: "weighted", tenants: []tenant{
			{name: "w1", weight: 1, load: 2, backlog: true},
			{name: "w4", weight: 4, load: 1.2, backlog: true},
		}},
		{name: "light", alone: "light", tenants: []tenant{
			{name: "heavy", weight: 1, load: 2, backlog: true},
			{name: "light", weight: 1, load: 0.05},
		}},
		{name: "return", tenants: []tenant{
			{name: "heavy", weight: 1, load: 2, backlog: true},
			{name: "owner", weight: 1, guarantee: *limitN / 2, load: 1, from: 0.5, burst: int(*limitN / 2)},
		}},
		{name: "mixed", tenants: []tenant{
			{name: "m1", weight: 1, load: 1, backlog: true, sizes: 8},
			{name: "m2", weight: 1, load: 1, backlog: true, sizes: 8},
			{name: "m3", weight: 1, load: 1, backlog: true, sizes: 8},
			{name: "small", weight: 1, load: 1, backlog: true, sizes: 1},
		}},
		{name: "mixedlight", alone: "light", limit: 32, jitter: 0.5, tenants: []tenant{
			{name: "heavy", weight: 1, load: 2, backlog: true, sizes: 8},
			{name: "light", weight: 1, load: 0.2, sizes: 8},
		}},
	}
}

func main() {
	flag.Parse()
	if *quick {
		*runs, *length = 1, time.Second
	}
	fmt.Printf("limit %d units; service %v; deadline %v; %v per scenario and limiter; %d runs; real time on this machine\n",
		*limitN, *service, *deadline, *length, *runs)
	var all [][]outcome // [run][scenario x limiter]
	for r := range *runs {
		var rs []outcome
		for _, sc := range scenarios() {
			if !regexp.MustCompile(*only).MatchString(sc.name) {
				continue
			}
			for _, l := range limiters() {
				rs = append(rs, measure(sc, l, sc.tenants, uint64(r+1)))
				if sc.alone != "" {
					i := slices.IndexFunc(sc.tenants, func(t tenant) bool { return t.name == sc.alone })
					o := measure(sc, l, sc.tenants[i:i+1], uint64(r+1))
					o.limiter += ", alone"
					rs = append(rs, o)
				}
			}
		}
		all = append(all, rs)
		fmt.Fprintf(os.Stderr, "run %d done\n", r+1)
	}
	failed := report(os.Stdout, all)
	if *pngPath != "" {
		if err := chart(*pngPath, all[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if failed {
		os.Exit(1)
	}
}

// tenantResult is what one tenant got in one measurement.
type tenantResult struct {
	tenant
	served    int64           // units granted in the measured window
	waits     []time.Duration // of the requests granted
	failed    int64           // requests that reached their deadline
	returnAt  int64           // return: units released by anyone before the owner asked again
	returnGot int64           // return: units released by anyone when it held its guarantee; -1: never
	unitTime  time.Duration   // units held times how long, summed, within the measured window
	latencies []time.Duration // wait + service, of the requests granted
}

// outcome is one scenario with one limiter.
type outcome struct {
	scenario, limiter string
	limit             int64
	tenants           []tenantResult
	maxInService      int64     // the most units in service at once, by the backend's count
	violations        int64     // grants that found the limit exceeded
	samples           [][]int64 // units in service per tenant, about every sampleEvery
	sampledAt         []time.Duration
	idleUse           float64 // return: mean units in service while the owner was idle
}

const sampleEvery = 10 * time.Millisecond

// backend serves requests and counts, independently of the limiters, the units
// in service.
type backend struct {
	limit      int64
	inService  atomic.Int64
	max        atomic.Int64
	violations atomic.Int64
	released   atomic.Int64   // return: units given back to the limiter, counted before each release
	perTenant  []atomic.Int64 // units in service, per tenant
}

// serve holds n units of tenant i for d; it is called right after each grant.
func (b *backend) serve(i int, n int64, d time.Duration) {
	if v := b.inService.Add(n); v > b.limit {
		b.violations.Add(1)
	} else {
		for {
			m := b.max.Load()
			if v <= m || b.max.CompareAndSwap(m, v) {
				break
			}
		}
	}
	b.perTenant[i].Add(n)
	time.Sleep(d)
	b.perTenant[i].Add(-n)
	b.inService.Add(-n)
}

func measure(sc scenario, l namedLimiter, tenants []tenant, seed uint64) outcome {
	limit := sc.limitOf()
	lim := l.make(tenants, limit)
	b := &backend{limit: limit, perTenant: make([]atomic.Int64, len(tenants))}
	res := make([]tenantResult, len(tenants))
	owner := -1 // the tenant with a guarantee that starts late, if any
	for i, t := range tenants {
		res[i] = tenantResult{tenant: t, returnAt: -1, returnGot: -1}
		if t.guarantee > 0 && t.from > 0 {
			owner = i
		}
	}
	// Units a tenant holds and its calls in progress, as the limiter counts
	// them; nil if it does not.
	var heldBy func(string) int64
	var waitersOf func(string) int
	if h, ok := lim.(counting); ok {
		heldBy, waitersOf = h.heldBy, h.waitersOf
	}
	var mu sync.Mutex        // guards res's waits, served and the return fields
	var releaseMu sync.Mutex // return: one release counted at a time
	start := time.Now()
	end := start.Add(*length)
	warm := start.Add(*length / 5) // the window starts when the backlogs have built up
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()

	var wg sync.WaitGroup
	for i, t := range tenants {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			meanSize := float64(1+max(t.sizes, 1)) / 2
			rate := t.load * float64(limit) / service.Seconds() / meanSize
			next := start.Add(time.Duration(t.from * float64(*length)))
			burst := t.burst
			for {
				if burst > 0 {
					burst--
				} else {
					next = next.Add(time.Duration(r.ExpFloat64() / rate * float64(time.Second)))
				}
				if !next.Before(end) {
					return
				}
				time.Sleep(time.Until(next))
				arrived := time.Now()
				n, d := int64(1), *service // the scenarios of one size and one service time draw nothing for them
				if t.sizes > 1 {
					n += r.Int64N(t.sizes)
				}
				if sc.jitter > 0 {
					d = time.Duration(float64(d) * (1 + sc.jitter*(2*r.Float64()-1)))
				}
				wg.Go(func() {
					rctx, rcancel := context.WithDeadline(ctx, arrived.Add(*deadline))
					defer rcancel()
					release, err := lim.acquire(rctx, t.name, n)
					if err != nil {
						mu.Lock()
						res[i].failed++
						mu.Unlock()
						return
					}
					granted := time.Now()
					mu.Lock()
					if granted.After(warm) {
						res[i].served += n
						res[i].waits = append(res[i].waits, granted.Sub(arrived))
					}
					mu.Unlock()
					b.serve(i, n, d)
					done := time.Now()
					if from, to := maxTime(granted, warm), minTime(done, end); to.After(from) {
						mu.Lock()
						res[i].unitTime += time.Duration(n) * to.Sub(from)
						if granted.After(warm) {
							res[i].latencies = append(res[i].latencies, done.Sub(arrived))
						}
						mu.Unlock()
					}
					if o := owner; o >= 0 && heldBy != nil {
						// Releases are counted one at a time, each with its own
						// grants: two releases counted at once could see each
						// other's grants and count one unit too many or too few.
						releaseMu.Lock()
						x := b.released.Add(n)
						// The owner's burst is in progress (waiting, or granted
						// meanwhile): units released from here on count.
						mu.Lock()
						if res[o].returnAt < 0 && heldBy(tenants[o].name)+int64(waitersOf(tenants[o].name)) >= tenants[o].guarantee {
							res[o].returnAt = x - 1
						}
						mu.Unlock()
						release()
						// The release's own grants are made when release returns: the
						// first that leaves the owner holding its guarantee is where
						// the guarantee came back, counted in units released.
						mu.Lock()
						if res[o].returnGot < 0 && res[o].returnAt >= 0 && heldBy(tenants[o].name) >= tenants[o].guarantee {
							res[o].returnGot = x
						}
						mu.Unlock()
						releaseMu.Unlock()
					} else {
						release()
					}
				})
			}
		})
	}
	var samples [][]int64
	var sampledAt []time.Duration
	var idleSum, idleN float64
	tick := time.NewTicker(sampleEvery)
	for now := range tick.C {
		if now.After(end) {
			break
		}
		row := make([]int64, len(tenants))
		var total int64
		for i := range row {
			row[i] = b.perTenant[i].Load()
			total += row[i]
		}
		samples, sampledAt = append(samples, row), append(sampledAt, now.Sub(start))
		if sc.name == "return" && now.After(warm) && now.Before(start.Add(*length/2)) {
			idleSum += float64(total)
			idleN++
		}
	}
	tick.Stop()
	wg.Wait()
	o := outcome{scenario: sc.name, limiter: l.name, limit: limit, tenants: res, maxInService: b.max.Load(),
		violations: b.violations.Load(), samples: samples, sampledAt: sampledAt}
	if idleN > 0 {
		o.idleUse = idleSum / idleN
	}
	return o
}

// shares returns each backlogged tenant's share of the units served, its
// weighted fair share among the backlogged, and Jain's index over the shares
// divided by the weights.
func (o outcome) shares() (got, fair []float64, jain float64) {
	var total, weights float64
	for _, t := range o.tenants {
		if t.backlog {
			total += float64(t.served)
			weights += float64(t.weight)
		}
	}
	var sum, sq float64
	for _, t := range o.tenants {
		if !t.backlog {
			continue
		}
		g, f := float64(t.served)/total, float64(t.weight)/weights
		got, fair = append(got, g), append(fair, f)
		x := g / float64(t.weight)
		sum += x
		sq += x * x
	}
	return got, fair, sum * sum / (float64(len(got)) * sq)
}

// p99 returns the 99th percentile of ds, 0 for none.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(math.Ceil(0.99*float64(len(s))))-1]
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
