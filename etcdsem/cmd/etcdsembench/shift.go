package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// The shift: one process loads a capacity (8, then 16) with 16 goroutines
// holding a unit shiftHold each, then its load stops (it keeps its handle, and
// so its blocks); another process's demand is then served from the units the
// first no longer uses. Two shapes:
//
//   - starts: the second process's load (16 goroutines like the first's)
//     starts 0.7 s after the first's stopped, its units idle since: the time
//     from its start to its first grant.
//   - waits: the second process waits for the whole capacity (one goroutine
//     asking for every unit, its key queued in etcd) from 0.3 s
//     before the first's load stops: the time from the first's last release
//     before that grant to the grant. In block mode that is the load's last
//     release (the first keeps its fair share, half, while its load runs);
//     plain mode serves the request in FIFO order once the holders ahead of
//     it release, while the load runs.
//
// Each is also given in etcd write round trips, two ways: the time of one
// write the second process makes at the moment measured from (the second's
// start; the first's stop), which meets etcd as the writes on the measured
// path do (the first write after a pause is the slowest); and the median of
// 11 writes it makes one after the other just before its load, with etcd warm
// and quiet.
var shiftCapacities = []int64{8, 16}

const (
	shiftBlock = 4
	shiftHold  = 10 * time.Millisecond
)

// A shiftShape is one way demand moves from the first process to the second.
type shiftShape struct {
	name string
	run  func(b *bench, mode string, capacity int64) (shiftResult, error)
}

// A shiftResult is one run of a shape.
type shiftResult struct {
	served        time.Duration // the time measured
	along, before time.Duration // the round trips: the write at the moment, and just before
}

func (r shiftResult) with(res result) shiftResult {
	r.along, r.before = res.Write, res.RTT
	return r
}

var shiftShapes = []shiftShape{
	{"starts after the units went idle: its start to its first grant", (*bench).shiftStarts},
	{"waits for them all when the load stops: the last release to its grant", (*bench).shiftWaits},
}

// printShift runs each shape in each of modes and prints its table.
func (b *bench) printShift(out io.Writer, runs int, modes []string) error {
	fmt.Fprintf(out, "\nshifting demand (block size %d, 16 goroutines, %v holds): one process's load stops, another process is served\n",
		shiftBlock, shiftHold)
	fmt.Fprintln(out, "\n| capacity | mode | the other process | served after | in writes at that moment | write at that moment | in round trips before | round trip before |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|")
	trips := func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
	for _, capacity := range shiftCapacities {
		for _, sh := range shiftShapes {
			for _, mode := range modes {
				if err := b.printShiftRow(out, runs, capacity, sh, mode, trips); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// printShiftRow runs one shape in one mode runs times and prints its row.
func (b *bench) printShiftRow(out io.Writer, runs int, capacity int64, sh shiftShape, mode string, trips func(float64) string) error {
	var served, along, before []time.Duration
	var inAlong, inBefore []float64
	for range runs {
		r, err := sh.run(b, mode, capacity)
		for tries := 1; errors.Is(err, errNotStopped) && tries < 5; tries++ {
			r, err = sh.run(b, mode, capacity)
		}
		if err != nil {
			return fmt.Errorf("shift, capacity %d, %s, %s: %w", capacity, mode, sh.name, err)
		}
		served, along, before = append(served, r.served), append(along, r.along), append(before, r.before)
		inAlong = append(inAlong, float64(r.served)/float64(r.along))
		inBefore = append(inBefore, float64(r.served)/float64(r.before))
	}
	fmt.Fprintf(out, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", capacity, mode, sh.name, spread(served, fmtDuration),
		spread(inAlong, trips), spread(along, fmtDuration), spread(inBefore, trips), spread(before, fmtDuration))
	return nil
}

// shiftSpecs returns the two processes' specs on a fresh semaphore: the first
// loads it for 1 s; the second, a copy, the caller adjusts.
func (b *bench) shiftSpecs(mode string, capacity int64) (first, second spec) {
	b.runs++
	name := fmt.Sprintf("etcdsembench/%d-%d", os.Getpid(), b.runs)
	start := time.Now().Add(2500 * time.Millisecond)
	first = spec{Endpoint: b.endpoint, Name: name, Mode: mode, Capacity: capacity, Block: shiftBlock,
		Goroutines: 16, Hold: shiftHold, Start: start, Duration: time.Second}
	second = first
	second.Index = 1
	return first, second
}

// shiftStarts runs the shape "starts" once: the time from the second load's
// start to its first grant.
func (b *bench) shiftStarts(mode string, capacity int64) (shiftResult, error) {
	first, second := b.shiftSpecs(mode, capacity)
	second.Start, second.Duration = first.Start.Add(first.Duration+700*time.Millisecond), 300*time.Millisecond
	second.WriteAt = second.Start
	results, err := runWorkers([]spec{first, second})
	if err != nil {
		return shiftResult{}, err
	}
	if !results[0].Stopped.Before(results[1].Began) {
		return shiftResult{}, errNotStopped
	}
	if results[1].First.IsZero() {
		return shiftResult{}, errors.New("the second load was never served")
	}
	return shiftResult{served: results[1].First.Sub(results[1].Began)}.with(results[1]), nil
}

// shiftWaits runs the shape "waits" once: the time from the first's last
// release before the second's first grant to that grant.
func (b *bench) shiftWaits(mode string, capacity int64) (shiftResult, error) {
	first, second := b.shiftSpecs(mode, capacity)
	first.Releases = true
	second.Goroutines, second.Units = 1, capacity
	second.Start, second.Duration = first.Start.Add(first.Duration-300*time.Millisecond), 500*time.Millisecond
	second.WriteAt = first.Start.Add(first.Duration)
	results, err := runWorkers([]spec{first, second})
	if err != nil {
		return shiftResult{}, err
	}
	granted := results[1].First
	if granted.IsZero() {
		return shiftResult{}, errors.New("the second process was never served")
	}
	var last time.Time
	for _, r := range results[0].Releases {
		if r.Before(granted) && r.After(last) {
			last = r
		}
	}
	if last.IsZero() {
		return shiftResult{}, errors.New("the second process was served before the first released anything")
	}
	return shiftResult{served: granted.Sub(last)}.with(results[1]), nil
}

// errNotStopped: a run whose first load was still releasing when the second
// started (a loaded machine): it measures nothing and is run again.
var errNotStopped = errors.New("the first load had not stopped when the second started")
