package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// This file is the open-loop runner of the door scenarios, (b) at the doors
// (doors.go) and (c), criticality (criticality.go): requests of several
// classes arrive as Poisson processes, each with one budget that is both its
// deadline and the longest it waits, and each ends one way, which tells
// whether the caller was served, served too late, or told it would not be,
// and how soon.

// An openEnding is how one request of a door scenario ended.
type openEnding uint8

const (
	openServed      openEnding = iota // answered within its budget
	openLate                          // admitted and served, but after its budget (its caller had left)
	openToldAtOnce                    // refused within a tenth of its budget
	openToldLate                      // refused, or its caller gave up unanswered, after a tenth of its budget or more
	openNotAnswered                   // the caller's budget ran out with no answer, and the server never served it (HTTP only: client side it is openToldLate)
	openEndings
)

// atOnceShare is the share of its budget within which a refusal counts as told
// at once.
const atOnceShare = 0.1

// refusalEnding is the ending of a request refused at elapsed into its budget.
func refusalEnding(elapsed, budget time.Duration) openEnding {
	if float64(elapsed) < atOnceShare*float64(budget) {
		return openToldAtOnce
	}
	return openToldLate
}

// An openRequest is one arrival: when, from the run's start, and its class.
type openRequest struct {
	at    time.Duration
	class int
}

// poissonArrivals returns the arrivals of a run: per phase of phaseLen and
// per class, a Poisson process at rates[phase][class] per second, merged in
// time order, the same for a given seed.
func poissonArrivals(seed uint64, phaseLen time.Duration, rates [][]float64) []openRequest {
	r := rand.New(rand.NewPCG(seed, 0xd00e))
	var out []openRequest
	for p, classes := range rates {
		start, end := phaseLen*time.Duration(p), phaseLen*time.Duration(p+1)
		for c, rate := range classes {
			if rate <= 0 {
				continue
			}
			for at := start; ; {
				at += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
				if at >= end {
					break
				}
				out = append(out, openRequest{at: at, class: c})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b openRequest) int { return int(a.at - b.at) })
	return out
}

// An openDoor admits and serves one request: do returns how it ended, given
// ctx, whose deadline is the request's budget from its arrival.
type openDoor interface {
	do(ctx context.Context, class int, arrival time.Time, budget time.Duration) openEnding
	limit() int // the limit now, for the report; 0 if none
}

// openResult is what one door did in one run.
type openResult struct {
	ends    [][][openEndings]int // [phase][class]: requests by ending, by phase of arrival
	latency [][][]time.Duration  // [phase][class]: served requests' latency from arrival
	limits  [][]int              // [phase]: the limit every 100ms
	extra   []map[string]float64 // [phase]: what the door counts itself (the HTTP server's late service)
}

// runOpenLoop replays arr through door on the clock of the calling goroutine
// (real, or a synctest bubble's), calling setPhase(p) at the start of each
// phase after the first, and returns once every caller has returned.
func runOpenLoop(door openDoor, arr []openRequest, phases, classes int, phaseLen, budget time.Duration, setPhase func(int)) openResult {
	res := openResult{ends: make([][][openEndings]int, phases), latency: make([][][]time.Duration, phases),
		limits: make([][]int, phases), extra: make([]map[string]float64, phases)}
	for p := range phases {
		res.ends[p] = make([][openEndings]int, classes)
		res.latency[p] = make([][]time.Duration, classes)
		res.extra[p] = map[string]float64{}
	}
	var mu sync.Mutex // guards res.ends and res.latency
	start := time.Now()
	var timers []*time.Timer
	for p := 1; p < phases; p++ {
		timers = append(timers, time.AfterFunc(phaseLen*time.Duration(p), func() { setPhase(p) }))
	}
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(bucket)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if p := int(time.Since(start) / phaseLen); p < phases {
					res.limits[p] = append(res.limits[p], door.limit())
				}
			}
		}
	})
	var callers sync.WaitGroup
	for _, rq := range arr {
		arrival := start.Add(rq.at)
		if d := time.Until(arrival); d > 0 {
			time.Sleep(d)
		}
		callers.Go(func() {
			ctx, cancel := context.WithDeadline(context.Background(), arrival.Add(budget))
			defer cancel()
			e := door.do(ctx, rq.class, arrival, budget)
			lat := time.Since(arrival)
			p := min(int(rq.at/phaseLen), phases-1)
			mu.Lock()
			defer mu.Unlock()
			res.ends[p][rq.class][e]++
			if e == openServed {
				res.latency[p][rq.class] = append(res.latency[p][rq.class], lat)
			}
		})
	}
	callers.Wait()
	close(stop)
	sampler.Wait()
	for _, t := range timers {
		t.Stop()
	}
	return res
}

// openStats are one door's numbers in one phase, over a set of classes.
type openStats struct {
	served, late, atOnce, toldLate, unanswered int
	p50, p99                                   time.Duration
	limit                                      int // median of the samples
}

func (r openResult) stats(p int, classes ...int) openStats {
	var s openStats
	var lat []time.Duration
	for _, c := range classes {
		e := r.ends[p][c]
		s.served += e[openServed]
		s.late += e[openLate]
		s.atOnce += e[openToldAtOnce]
		s.toldLate += e[openToldLate]
		s.unanswered += e[openNotAnswered]
		lat = append(lat, r.latency[p][c]...)
	}
	s.p50, s.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	if l := slices.Clone(r.limits[p]); len(l) > 0 {
		slices.Sort(l)
		s.limit = l[len(l)/2]
	}
	return s
}

// notServed counts the requests that were not served in time.
func (s openStats) notServed() int { return s.late + s.atOnce + s.toldLate + s.unanswered }

// atOnceShare is the share of the requests not served in time that were told
// so at once; 1 when every request was served.
func (s openStats) atOnceShare() float64 {
	if n := s.notServed(); n > 0 {
		return float64(s.atOnce) / float64(n)
	}
	return 1
}

// lateShare is the share of the requests the backend served that it served
// after their budget.
func (s openStats) lateShare() float64 {
	if n := s.served + s.late; n > 0 {
		return float64(s.late) / float64(n)
	}
	return 0
}

// medianCell formats the median over runs of f, and its range.
func medianCell(v []float64, format string) string {
	v = slices.Clone(v)
	slices.Sort(v)
	m := fmt.Sprintf(format, v[len(v)/2])
	if lo, hi := fmt.Sprintf(format, v[0]), fmt.Sprintf(format, v[len(v)-1]); len(v) > 1 && lo != hi {
		return m + " (" + lo + "–" + hi + ")"
	}
	return m
}

// table writes a Markdown table.
func table(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("---|", len(header)))
	for _, r := range rows {
		fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
