package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/httpsem"
)

// The doors scenario: one timeout per request, as a door gives it, is both
// its deadline and the longest it waits, in front of a FIFO backend whose
// capacity drops and returns. It measures what the deadline rule is for: that
// callers are served in time or told at once, never served too late.
//
//   - at the Limiter: each request calls Acquire with a context whose
//     deadline is its budget, then the backend (simulated or real time);
//   - over HTTP (real time only): a net/http server on 127.0.0.1 runs the
//     backend behind httpsem with WithTimeout(budget), and a load generator
//     in this process sends open-loop requests with the budget as the
//     client's timeout.
var (
	doorsRun   = flag.Bool("doors", false, "run the doors scenario: a FIFO backend behind the Limiter (-clock sim or real) and, in real time, behind httpsem over HTTP")
	doorsPhase = flag.Duration("doors-phase", 10*time.Second, "length of each phase of the doors and criticality scenarios")
)

// The setting: a FIFO backend of doorCaps slots in turn, doorBase per
// request, doorRate requests per second with a budget of doorBudget.
var doorCaps = []int{32, 8, 32}

const (
	doorBase   = 20 * time.Millisecond
	doorRate   = 600.0
	doorBudget = 200 * time.Millisecond
)

// A slotBackend serves requests FIFO on a number of slots, each for base. It
// does not see a caller leave: a request whose caller gave up is served all
// the same, when its turn comes.
type slotBackend struct {
	slots   *semaphore.Semaphore // the slots, resized at each phase
	base    time.Duration
	serving sync.WaitGroup // the requests it has not finished, their callers gone or not
}

func newSlotBackend(capacity int, base time.Duration) *slotBackend {
	return &slotBackend{slots: semaphore.New(int64(capacity)), base: base}
}

// serve runs one request to its end, whoever waits for it.
func (b *slotBackend) serve() {
	b.serving.Add(1)
	defer b.serving.Done()
	_ = b.slots.Acquire(context.Background(), 1) // never fails: not broken, one unit
	time.Sleep(b.base)
	b.slots.Release(1)
}

// finish waits until every request sent has been served.
func (b *slotBackend) finish() { b.serving.Wait() }

// call serves a request and waits for it until ctx ends; the request is
// served to its end either way.
func (b *slotBackend) call(ctx context.Context) error {
	done := make(chan struct{})
	b.serving.Add(1) // counted before call returns, so that finish sees it
	go func() {
		defer b.serving.Done()
		b.serve()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A doorStrategy makes a fresh door in front of a backend.
type doorStrategy struct {
	name string
	http bool // over HTTP: real time only
	make func(b *slotBackend) openDoor
}

func doorStrategies() []doorStrategy {
	limiter := func(opts ...adaptive.Option) func(*slotBackend) openDoor {
		return func(b *slotBackend) openDoor {
			return &limiterDoor{l: adaptive.New(semaphore.New(int64(doorCaps[0])), nil, opts...), call: b.call}
		}
	}
	return []doorStrategy{
		{name: "Limiter (default)", make: limiter()},
		{name: "Limiter, WithoutDeadlineShedding", make: limiter(adaptive.WithoutDeadlineShedding())},
		{name: "Limiter, WithoutDeadlineShedding +standing 5ms/100ms",
			make: limiter(adaptive.WithoutDeadlineShedding(), adaptive.WithStandingQueue(5*time.Millisecond, 100*time.Millisecond))},
		{name: "static 8", make: func(b *slotBackend) openDoor { return &staticDoor{sem: semaphore.New(8), call: b.call} }},
		{name: "static 32", make: func(b *slotBackend) openDoor { return &staticDoor{sem: semaphore.New(32), call: b.call} }},
		{name: "HTTP, httpsem.Adaptive (default)", http: true, make: func(b *slotBackend) openDoor {
			l := adaptive.New(semaphore.New(int64(doorCaps[0])), nil)
			return newHTTPDoor(b, l.Limit, httpsem.Adaptive(l, httpsem.WithTimeout(doorBudget)))
		}},
		{name: "HTTP, httpsem.Adaptive, WithoutDeadlineShedding", http: true, make: func(b *slotBackend) openDoor {
			l := adaptive.New(semaphore.New(int64(doorCaps[0])), nil, adaptive.WithoutDeadlineShedding())
			return newHTTPDoor(b, l.Limit, httpsem.Adaptive(l, httpsem.WithTimeout(doorBudget), httpsem.WithoutDeadlineShedding()))
		}},
		{name: "HTTP, httpsem.Limit 32 (default)", http: true, make: func(b *slotBackend) openDoor {
			return newHTTPDoor(b, func() int { return 32 }, httpsem.Limit(semaphore.New(32), httpsem.WithTimeout(doorBudget)))
		}},
	}
}

// limiterDoor admits through an adaptive Limiter.
type limiterDoor struct {
	l    *adaptive.Limiter
	call func(context.Context) error
}

func (d *limiterDoor) do(ctx context.Context, _ int, arrival time.Time, budget time.Duration) openEnding {
	c, err := d.l.Acquire(ctx)
	if err != nil {
		return refusalEnding(time.Since(arrival), budget)
	}
	err = d.call(ctx)
	c.Done(adaptive.Classify(err))
	if err != nil {
		return openLate
	}
	return openServed
}

func (d *limiterDoor) limit() int { return d.l.Limit() }

// staticDoor admits through a core semaphore, FIFO, waiting up to the budget.
type staticDoor struct {
	sem  *semaphore.Semaphore
	call func(context.Context) error
}

func (d *staticDoor) do(ctx context.Context, _ int, arrival time.Time, budget time.Duration) openEnding {
	if err := d.sem.Acquire(ctx, 1); err != nil {
		return refusalEnding(time.Since(arrival), budget)
	}
	defer d.sem.Release(1)
	if d.call(ctx) != nil {
		return openLate
	}
	return openServed
}

func (d *staticDoor) limit() int { return int(d.sem.Capacity()) }

// httpDoor is a real HTTP server on 127.0.0.1 running the backend behind a
// door's middleware, and the client that sends it requests. The server
// counts, by phase of the request's arrival, the requests it served and
// those it served after their budget.
type httpDoor struct {
	srv      *http.Server
	url      string
	client   *http.Client
	limitFn  func() int
	start    time.Time       // the run's start, for the phase of a request
	served   [8]atomic.Int64 // by phase
	late     [8]atomic.Int64 // by phase
	phaseLen time.Duration
}

func newHTTPDoor(b *slotBackend, limit func() int, door func(http.Handler) http.Handler) *httpDoor {
	d := &httpDoor{limitFn: limit}
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent, _ := strconv.ParseInt(r.Header.Get("X-Sent"), 10, 64)
		b.serve() // the backend does not see the client leave
		if p := int(time.Duration(sent-d.start.UnixNano()) / d.phaseLen); p >= 0 && p < len(d.served) {
			d.served[p].Add(1)
			if time.Now().UnixNano() > sent+int64(doorBudget) {
				d.late[p].Add(1)
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	d.srv = &http.Server{Handler: door(backend), ReadHeaderTimeout: time.Second}
	go func() { _ = d.srv.Serve(ln) }()
	d.url = "http://" + ln.Addr().String() + "/"
	d.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, DisableCompression: true}}
	return d
}

func (d *httpDoor) do(ctx context.Context, _ int, arrival time.Time, budget time.Duration) openEnding {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	req.Header.Set("X-Sent", strconv.FormatInt(arrival.UnixNano(), 10))
	resp, err := d.client.Do(req)
	if err != nil {
		return openToldLate // the client's budget ran out unanswered
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if time.Since(arrival) <= budget {
			return openServed
		}
		return openToldLate
	}
	return refusalEnding(time.Since(arrival), budget)
}

func (d *httpDoor) limit() int { return d.limitFn() }

func (d *httpDoor) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(ctx)
	d.client.CloseIdleConnections()
}

// runDoors runs the doors scenario: every strategy that runs on the clock
// asked for, runs times, and prints the report.
func runDoors(t *testing.T, real bool, runs int, phaseLen time.Duration, only func(string) bool) [][]openResult {
	rates := make([][]float64, len(doorCaps))
	for p := range rates {
		rates[p] = []float64{doorRate}
	}
	var names []string
	var results [][]openResult // [strategy][run]
	for _, s := range doorStrategies() {
		if s.http && !real || !only(s.name) {
			continue
		}
		var rs []openResult
		for r := range runs {
			arr := poissonArrivals(uint64(r+1), phaseLen, rates)
			began := time.Now()
			run := func() {
				b := newSlotBackend(doorCaps[0], doorBase)
				door := s.make(b)
				if h, ok := door.(*httpDoor); ok {
					h.start, h.phaseLen = time.Now(), phaseLen
					defer h.close()
				}
				res := runOpenLoop(door, arr, len(doorCaps), 1, phaseLen, doorBudget, func(p int) { b.slots.Resize(int64(doorCaps[p])) })
				b.finish()
				if h, ok := door.(*httpDoor); ok {
					for p := range doorCaps {
						res.extra[p]["served"] = float64(h.served[p].Load())
						res.extra[p]["late"] = float64(h.late[p].Load())
					}
				}
				rs = append(rs, res)
			}
			if real {
				run()
			} else {
				synctest.Test(t, func(*testing.T) { run() })
			}
			fmt.Fprintf(os.Stderr, "doors run %d: %s done in %v\n", r+1, s.name, time.Since(began).Round(time.Millisecond))
		}
		names, results = append(names, s.name), append(results, rs)
	}
	clock := "simulated"
	if real {
		clock = "real time"
	}
	reportDoors(os.Stdout, names, results, phaseLen, clock)
	return results
}

// reportDoors prints the doors scenario's numbers, per phase, medians over
// the runs with their ranges.
func reportDoors(w io.Writer, names []string, results [][]openResult, phaseLen time.Duration, clock string) {
	fmt.Fprintf(w, "## Doors: one budget per request (deadline and wait), a FIFO backend\n\n")
	fmt.Fprintf(w, "Clock: %s. %d run(s). FIFO backend of C slots, %v a request, C = %v in phases of %v; %.0f requests/s (Poisson), each with a budget of %v that is its deadline and its longest wait.\n",
		clock, len(results[0]), doorBase, doorCaps, phaseLen, doorRate, doorBudget)
	fmt.Fprintf(w, "Useful: served within the budget, per second, as a share of min(offered, capacity). Late: served by the backend after the budget, as a share of what it served. Told at once: refused within %.0f%% of the budget, as a share of the requests not served in time. Latency of the served, from arrival.\n",
		100*atOnceShare)
	fmt.Fprintf(w, "Over HTTP the client's budget is its timeout; late service is counted by the server, and a request the client gave up on is told late.\n")
	for p, c := range doorCaps {
		useful := min(doorRate, float64(c)/doorBase.Seconds())
		fmt.Fprintf(w, "\n### Phase %d: capacity %d (%.0f/s), offered %.0f/s\n\n", p+1, c, float64(c)/doorBase.Seconds(), doorRate)
		var rows [][]string
		for i, n := range names {
			col := func(f func(r openResult, s openStats) float64, format string) string {
				var v []float64
				for _, r := range results[i] {
					v = append(v, f(r, r.stats(p, 0)))
				}
				return medianCell(v, format)
			}
			rows = append(rows, []string{n,
				col(func(_ openResult, s openStats) float64 { return float64(s.served) / phaseLen.Seconds() }, "%.0f"),
				col(func(_ openResult, s openStats) float64 { return float64(s.served) / phaseLen.Seconds() / useful }, "%.2f"),
				col(func(r openResult, s openStats) float64 {
					if n, ok := r.extra[p]["served"]; ok {
						return 100 * r.extra[p]["late"] / max(n, 1)
					}
					return 100 * s.lateShare()
				}, "%.1f%%"),
				col(func(_ openResult, s openStats) float64 { return float64(s.atOnce + s.toldLate) }, "%.0f"),
				col(func(_ openResult, s openStats) float64 { return 100 * s.atOnceShare() }, "%.0f%%"),
				col(func(_ openResult, s openStats) float64 { return msOf(s.p50) }, "%.0f"),
				col(func(_ openResult, s openStats) float64 { return msOf(s.p99) }, "%.0f"),
				col(func(_ openResult, s openStats) float64 { return float64(s.limit) }, "%.0f"),
			})
		}
		table(w, []string{"door", "useful/s", "÷ min(offered, capacity)", "late", "refused or unanswered", "told at once", "p50 ms", "p99 ms", "limit"}, rows)
	}
}

// doorsOnly returns the filter of -only for the door scenarios: everything
// when it is empty.
func doorsOnly(words []string) func(string) bool {
	return func(name string) bool {
		return len(words) == 0 || slices.ContainsFunc(words, func(w string) bool { return w != "" && strings.Contains(name, w) })
	}
}

// runDoorScenarios runs the scenarios -doors and -criticality ask for. With
// -quick, for CI: one simulated run of phases of 1s of each, then a real-time
// run over HTTP of the default door with phases of 500ms; it fails if the
// default Limiter of the doors scenario serves late or tells too few at once
// in simulated time, which a change of the deadline rule would show.
func runDoorScenarios(t *testing.T) {
	real := *clock == "real"
	if !real && *clock != "sim" {
		t.Fatalf("-clock %q: want sim or real", *clock)
	}
	var words []string
	if *only != "" {
		words = strings.Split(*only, ",")
	}
	if *quick {
		if *doorsRun {
			res := runDoors(t, false, 1, time.Second, doorsOnly([]string{"Limiter (default)"}))
			if err := checkDoors(res[0][0]); err != nil {
				t.Fatal(err)
			}
			runDoors(t, true, 1, 500*time.Millisecond, doorsOnly([]string{"HTTP, httpsem.Adaptive (default)"}))
		}
		if *criticalityRun {
			runCriticality(t, false, 1, time.Second, doorsOnly([]string{"Limiter"}))
		}
		return
	}
	if *doorsRun {
		runDoors(t, real, *runs, *doorsPhase, doorsOnly(words))
	}
	if *criticalityRun {
		runCriticality(t, real, *runs, *doorsPhase, doorsOnly(words))
	}
}

// checkDoors fails unless the default Limiter, in simulated time, served
// nothing late beyond 1% and told at least 90% of the requests it did not
// serve in time so at once, in every phase.
func checkDoors(r openResult) error {
	for p := range doorCaps {
		s := r.stats(p, 0)
		if s.lateShare() > 0.01 || s.atOnceShare() < 0.9 {
			return fmt.Errorf("doors, phase %d: %.1f%% served late, %.0f%% of the not served told at once; want <= 1%% and >= 90%%",
				p+1, 100*s.lateShare(), 100*s.atOnceShare())
		}
	}
	return nil
}
