package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fairsem/semaphore/etcdsem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// workerEnv holds a worker's spec, as JSON: the program re-runs itself as a
// worker process.
const workerEnv = "ETCDSEMBENCH_WORKER"

// A spec is one worker's load.
type spec struct {
	Endpoint   string        `json:"endpoint"`
	Name       string        `json:"name"`
	Mode       string        `json:"mode"` // "plain", "blocks" or "mutex"
	Capacity   int64         `json:"capacity"`
	Block      int64         `json:"block"` // block size in "blocks" mode
	Goroutines int           `json:"goroutines"`
	Hold       time.Duration `json:"hold"`
	Start      time.Time     `json:"start"` // every worker of a run starts its load then
	Duration   time.Duration `json:"duration"`
	Index      int           `json:"index"`    // the worker's number in its run
	Units      int64         `json:"units"`    // units of each acquire; 0 means 1
	Releases   bool          `json:"releases"` // report when each release began
	WriteAt    time.Time     `json:"writeAt"`  // if set, time one write made then, alongside the load
	Keys       int           `json:"keys"`     // "set" and "perkey": the keys goroutines take in turn
}

// A result is one worker's measurements.
type result struct {
	Grants   int64         `json:"grants"`
	Errors   int64         `json:"errors"`
	Latency  hist          `json:"latency"`  // of each acquire
	Began    time.Time     `json:"began"`    // the load began (at the start barrier, or late)
	First    time.Time     `json:"first"`    // the first grant
	Stopped  time.Time     `json:"stopped"`  // the last release
	RTT      time.Duration `json:"rtt"`      // median of 11 writes, just before the load
	Write    time.Duration `json:"write"`    // the write made at the spec's WriteAt
	Releases []time.Time   `json:"releases"` // when each release began, if the spec asks
	Err      string        `json:"err,omitempty"`
	// "set": the heap in use per key that a pass over as many new keys
	// leaves once they went idle (the Set keeps none), after the load;
	// "perkey": the heap per key once the load ended, above the heap before
	// the first Semaphore was made.
	IdleBytesPerKey float64 `json:"idleBytesPerKey"`
}

// worker runs the load of the spec in env, prints its result as one JSON line
// on out, and keeps its handle (and so its blocks) until in is closed.
func worker(env string, in io.Reader, out io.Writer) error {
	var sp spec
	if err := json.Unmarshal([]byte(env), &sp); err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{sp.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Until(sp.Start)+sp.Duration+time.Minute)
	defer cancel()
	res := result{Latency: newHist()}
	base := heapInUse()
	acquire, closeAll, err := acquirer(ctx, cli, sp)
	if err != nil {
		return err
	}
	if sp.Mode == "set" {
		// The Set with its lease and watch, once a first key went idle:
		// what is left above it at the end is what keys left behind.
		rel, err := acquire(0)()
		if err != nil {
			return err
		}
		if err := rel(); err != nil {
			return err
		}
		idleWait(ctx)
		base = heapInUse()
	}
	defer closeAll()
	idle := idleWait

	takes := make([]func() (func() error, error), sp.Goroutines)
	for g := range takes {
		takes[g] = acquire(g)
	}
	// The round trip as etcd answers just before the load, then the start
	// barrier shared with the other workers.
	time.Sleep(time.Until(sp.Start.Add(-rttLead)))
	res.RTT, err = roundTrip(ctx, cli, 11)
	if err != nil {
		return err
	}
	time.Sleep(time.Until(sp.Start))
	res.Began = time.Now()
	stop := sp.Start.Add(sp.Duration)
	rttDone := make(chan error, 1)
	if !sp.WriteAt.IsZero() {
		go func() {
			time.Sleep(time.Until(sp.WriteAt))
			var err error
			res.Write, err = roundTrip(ctx, cli, 1)
			rttDone <- err
		}()
	} else {
		rttDone <- nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range sp.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := newHist()
			var grants, errs int64
			var first, last time.Time
			var releases []time.Time
			take := takes[g]
			for time.Now().Before(stop) {
				t0 := time.Now()
				rel, err := take()
				if err != nil {
					errs++
					continue
				}
				granted := time.Now()
				h.add(granted.Sub(t0))
				if first.IsZero() {
					first = granted
				}
				grants++
				time.Sleep(sp.Hold)
				if sp.Releases {
					releases = append(releases, time.Now())
				}
				if err := rel(); err != nil {
					errs++
				}
				last = time.Now()
			}
			mu.Lock()
			defer mu.Unlock()
			res.Grants += grants
			res.Errors += errs
			res.Latency.merge(h)
			res.Releases = append(res.Releases, releases...)
			if !first.IsZero() && (res.First.IsZero() || first.Before(res.First)) {
				res.First = first
			}
			if last.After(res.Stopped) {
				res.Stopped = last
			}
		}()
	}
	wg.Wait()
	if err := <-rttDone; err != nil {
		return err
	}
	if sp.Keys > 0 {
		if idle != nil {
			// What keys leave behind once idle, with the client's
			// buffers warm: the heap across a pass over as many keys
			// again, each new to the Set.
			idle(ctx)
			base = heapInUse()
			if err := freshPass(ctx); err != nil {
				return err
			}
			idle(ctx)
		}
		res.IdleBytesPerKey = float64(int64(heapInUse())-int64(base)) / float64(sp.Keys)
	}
	if err := json.NewEncoder(out).Encode(res); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in) // hold the handle until the coordinator is done
	return nil
}

// idleWait and freshPass, set by acquirer in "set" mode: idleWait waits until
// the Set keeps no key in memory, freshPass takes and gives back one unit of
// each of as many keys as the load's, none of them used before. nil in the
// other modes.
var (
	idleWait  func(ctx context.Context)
	freshPass func(ctx context.Context) error
)

// acquirer returns, for goroutine g, a function that acquires one unit and
// returns its release, in the spec's mode; and a function closing what it
// opened.
func acquirer(ctx context.Context, cli *clientv3.Client, sp spec) (func(g int) func() (func() error, error), func(), error) {
	switch sp.Mode {
	case "plain", "blocks":
		opts := []etcdsem.Option{etcdsem.WithCapacity(sp.Capacity), etcdsem.WithClientName("worker-" + strconv.Itoa(sp.Index))}
		if sp.Mode == "blocks" {
			opts = append(opts, etcdsem.WithBlocks(sp.Block))
		}
		s, err := etcdsem.New(ctx, cli, sp.Name, opts...)
		if err != nil {
			return nil, nil, err
		}
		return func(int) func() (func() error, error) {
			return func() (func() error, error) {
				u, err := s.Acquire(ctx, max(sp.Units, 1))
				if err != nil {
					return nil, err
				}
				return func() error { return u.Release(ctx) }, nil
			}
		}, func() { s.Close() }, nil
	case "set":
		// One Set: goroutine g takes the keys g, g+G, g+2G, ... in turn.
		set, err := etcdsem.NewSet(ctx, cli, sp.Name, func(string) int64 { return sp.Capacity },
			etcdsem.WithClientName("worker-"+strconv.Itoa(sp.Index)))
		if err != nil {
			return nil, nil, err
		}
		idleWait = func(ctx context.Context) {
			for set.Keys() > 0 && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
		freshPass = func(ctx context.Context) error {
			var wg sync.WaitGroup
			errs := make(chan error, sp.Goroutines)
			for g := range sp.Goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := g; k < sp.Keys; k += sp.Goroutines {
						u, err := set.Acquire(ctx, "fresh"+strconv.Itoa(k), 1)
						if err == nil {
							err = u.Release(ctx)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			return <-errs
		}
		return func(g int) func() (func() error, error) {
			next := g
			return func() (func() error, error) {
				key := "k" + strconv.Itoa(next%sp.Keys)
				next += sp.Goroutines
				u, err := set.Acquire(ctx, key, max(sp.Units, 1))
				if err != nil {
					return nil, err
				}
				return func() error { return u.Release(ctx) }, nil
			}
		}, func() { set.Close() }, nil
	case "perkey":
		// One Semaphore per key, made before the load, as a user without a
		// Set would keep them.
		sems := make([]*etcdsem.Semaphore, sp.Keys)
		closeAll := func() {
			for _, s := range sems {
				if s != nil {
					s.Close()
				}
			}
		}
		for k := range sems {
			s, err := etcdsem.New(ctx, cli, sp.Name+"/k"+strconv.Itoa(k), etcdsem.WithCapacity(sp.Capacity),
				etcdsem.WithClientName("worker-"+strconv.Itoa(sp.Index)))
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			sems[k] = s
		}
		return func(g int) func() (func() error, error) {
			next := g
			return func() (func() error, error) {
				s := sems[next%sp.Keys]
				next += sp.Goroutines
				u, err := s.Acquire(ctx, max(sp.Units, 1))
				if err != nil {
					return nil, err
				}
				return func() error { return u.Release(ctx) }, nil
			}
		}, closeAll, nil
	case "mutex":
		// capacity mutexes make a semaphore of that capacity: goroutine g
		// of worker i always takes the same one, each in its own session (a
		// session holds a mutex for all its users at once).
		var sessions []*concurrency.Session
		var mu sync.Mutex
		return func(g int) func() (func() error, error) {
				idx := (sp.Index*sp.Goroutines + g) % int(sp.Capacity)
				sess, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
				if err != nil {
					return func() (func() error, error) { return nil, err }
				}
				mu.Lock()
				sessions = append(sessions, sess)
				mu.Unlock()
				m := concurrency.NewMutex(sess, fmt.Sprintf("%s/m%d", sp.Name, idx))
				return func() (func() error, error) {
					if err := m.Lock(ctx); err != nil {
						return nil, err
					}
					return func() error { return m.Unlock(ctx) }, nil
				}
			}, func() {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range sessions {
					s.Close()
				}
			}, nil
	}
	return nil, nil, fmt.Errorf("unknown mode %q", sp.Mode)
}

// heapInUse returns the bytes of the heap's live objects after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC() // the second empties the pools the first kept
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rttLead is how long before its load a worker measures the round trip.
const rttLead = 200 * time.Millisecond

// roundTrip returns the median time of k writes, one after the other: one
// etcd round trip of the kind every acquire makes (a write waits for the log
// to reach the disk).
func roundTrip(ctx context.Context, cli *clientv3.Client, k int) (time.Duration, error) {
	var ds []time.Duration
	for range k {
		t0 := time.Now()
		if _, err := cli.Put(ctx, "etcdsembench/rtt", ""); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func runWorker() {
	if err := worker(os.Getenv(workerEnv), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "etcdsembench worker:", err)
		os.Exit(1)
	}
}
