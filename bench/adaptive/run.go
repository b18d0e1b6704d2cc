package main

import (
	"context"
	"sync"
	"time"
)

// bucket is the resolution of the time series: served requests, the limit and
// the backend's in-flight count are recorded per bucket.
const bucket = 100 * time.Millisecond

// An ending is how a request ended.
type ending uint8

const (
	served       ending = iota // answered within its deadline
	late                       // admitted, but its deadline passed before the backend answered
	refused                    // turned away by the limiter at once (within atOnce): full, shed, or sure to be late
	refusedLater               // turned away by the limiter after waiting longer, before its budget ran out
	queueTimeout               // gave up waiting in the limiter's queue when its budget ran out
	endings
)

// atOnce is how soon a refusal must come to count as told at once: a caller
// refused within it can try elsewhere with nearly all of its budget left.
const atOnce = 10 * time.Millisecond

// result is what one strategy did in one run.
type result struct {
	served   []int             // per bucket, by completion: requests answered within their deadline
	latency  [][]time.Duration // per phase, by arrival: served requests' latency from arrival
	limits   []int             // per bucket: the limit at its end
	inFlight []int             // per bucket: requests at the backend at its end, those whose caller left included
	ends     [][endings]int    // per phase, by arrival: requests by how they ended
	lag      []time.Duration   // per request: how late its caller started after its arrival (the machine's scheduling)
}

// runOne replays the arrivals of sc through a fresh strategy in front of a
// fresh backend, on the clock of the calling goroutine (real, or a synctest
// bubble's), and returns when every caller has returned. The caller of each
// request runs on its own goroutine.
func runOne(sc scenario, ns namedStrategy, arr []request) result {
	nb := int(sc.runLen() / bucket)
	res := result{served: make([]int, nb), latency: make([][]time.Duration, len(sc.phases)),
		limits: make([]int, nb), inFlight: make([]int, nb), ends: make([][endings]int, len(sc.phases))}
	var mu sync.Mutex // guards res's served, latency, ends and lag

	s := ns.make()
	b := sc.server.new(sc.phases[0])
	start := time.Now()
	var changes []*time.Timer
	for p := 1; p < len(sc.phases); p++ {
		changes = append(changes, time.AfterFunc(sc.phaseLen*time.Duration(p), func() { b.setPhase(sc.phases[p]) }))
	}

	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() { // the limit and the backend's in-flight count at the end of each bucket
		defer sampler.Done()
		t := time.NewTicker(bucket)
		defer t.Stop()
		for k := 0; k < nb; {
			<-t.C
			// A ticker drops the ticks a stalled receiver missed: the buckets
			// that ended since the last tick take this sample.
			ended := min(nb, int(time.Since(start)/bucket))
			l, n := s.limit(), b.inFlight()
			for ; k < ended; k++ {
				res.limits[k], res.inFlight[k] = l, n
			}
		}
	}()

	var callers sync.WaitGroup
	for _, rq := range arr {
		arrival := start.Add(rq.at)
		if d := time.Until(arrival); d > 0 {
			time.Sleep(d)
		}
		callers.Add(1)
		go func() {
			defer callers.Done()
			lag := time.Since(arrival)
			ctx, cancel := context.WithDeadline(context.Background(), arrival.Add(sc.deadline))
			defer cancel()
			queue, cancelQueue := context.WithDeadline(ctx, arrival.Add(sc.queueBudget))
			defer cancelQueue()
			e := s.do(ctx, queue, b.call)
			end := time.Now()
			p := sc.phaseAt(rq.at)
			mu.Lock()
			defer mu.Unlock()
			res.ends[p][e]++
			res.lag = append(res.lag, lag)
			if e == served {
				res.latency[p] = append(res.latency[p], end.Sub(arrival))
				if k := int(end.Sub(start) / bucket); k < nb {
					res.served[k]++
				}
			}
		}()
	}
	callers.Wait()
	sampler.Wait()
	for _, t := range changes {
		t.Stop()
	}
	b.stop()
	return res
}

// waitEnding tells, for a request the limiter did not admit after it began
// waiting at start, whether it ran out of its queue budget or was turned away
// before, at once or later.
func waitEnding(queue context.Context, start time.Time) ending {
	switch {
	case queue.Err() != nil:
		return queueTimeout
	case time.Since(start) > atOnce:
		return refusedLater
	}
	return refused
}

// callEnding tells, for an admitted request, whether the backend answered in
// time, from the backend call's error.
func callEnding(err error) ending {
	if err != nil {
		return late
	}
	return served
}
