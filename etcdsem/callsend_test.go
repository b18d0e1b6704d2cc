//go:build linux

package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A callWatch times a test's calls against their bounds: a call still
// running past its bound is reported once, with the stacks of every
// goroutine, so that a call that does not end shows where it waits.
type callWatch struct {
	logf     func(format string, args ...any)
	mu       sync.Mutex
	overruns []string // the calls that ran past their bounds
	dumped   bool     // the stacks have been logged once
	calls    atomic.Int64
}

// do runs f, the call name, and reports it if it runs past bound.
func (w *callWatch) do(name string, bound time.Duration, f func()) {
	w.calls.Add(1)
	start := time.Now()
	reported := make(chan struct{}) // closed once the overrun is on record
	timer := time.AfterFunc(bound, func() {
		defer close(reported)
		buf := make([]byte, 8<<20)
		buf = buf[:runtime.Stack(buf, true)]
		w.mu.Lock()
		defer w.mu.Unlock()
		w.overruns = append(w.overruns, fmt.Sprintf("%s still running after %v", name, bound))
		if !w.dumped {
			w.dumped = true
			w.logf("%s still running after %v; every goroutine:\n%s", name, bound, buf)
		}
	})
	f()
	if !timer.Stop() {
		<-reported // the report made while it ran comes first
		w.mu.Lock()
		w.overruns = append(w.overruns, fmt.Sprintf("%s ended after %v, past its bound of %v", name, time.Since(start).Round(time.Millisecond), bound))
		w.mu.Unlock()
	}
}

// check fails t for every call that ran past its bound.
func (w *callWatch) check(t *testing.T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.overruns {
		t.Error(o)
	}
	t.Logf("%d calls, %d past their bounds", w.calls.Load(), len(w.overruns))
}

// busy keeps every core busy until stop is called.
func busy() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				if n%1_000_000 == 0 {
					select {
					case <-done:
						return
					default:
					}
				}
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// The bounds of the calls in TestFaults_EveryCallAndProcessEndsUnderLoad: a
// call ends by its context, and the slack covers what it does after (giving a
// key up, building its error) on a machine whose cores are busy; Close ends
// within the lease TTL; a killed member is gone within seconds, and a
// restarted one serves within a minute and a half.
const (
	callTimeout = 5 * time.Second
	callSlack   = 5 * time.Second
	endsTTL     = 2 * time.Second
)

// Every call ends within its bound, and every process too, through leader
// kills, freezes of the leader and of a follower, follower kills, handles
// closed and opened while a member is down, and a partition that cuts two
// handles off from every member past their TTL and heals, with both cores
// busy, in plain and block mode: callers loop Acquire, a hold and Release,
// each with a context of its own; every call is timed against its bound and
// one past it fails the test, with the stacks of every goroutine when it is
// still running. The cut-off handles are served again once the partition
// heals, and the history checker then finds etcd's history clean.
func TestFaults_EveryCallAndProcessEndsUnderLoad(t *testing.T) {
	fulltest.Fault(t)
	w := &callWatch{logf: t.Logf}
	defer w.check(t)
	procs := newCluster(t, 3)
	for _, p := range procs {
		p.start()
	}
	waitHealthy(t, procs...)
	stopBusy := busy()
	defer stopBusy()
	eps := []string{procs[0].client, procs[1].client, procs[2].client}
	// The handles of the last two slots reach the members through proxies
	// only: the partition cuts them off.
	var pxs []*proxy
	var cutEps []string
	for _, p := range procs {
		px := newProxy(t, p.client)
		pxs = append(pxs, px)
		cutEps = append(cutEps, px.endpoint())
	}
	const reopened = 4 // the slots the reopener closes and opens
	name := "ends"
	log := &grantLog{}

	// Handles are replaced while the faults run: each slot is a handle in
	// plain or block mode, closed and opened again by the reopener.
	type slot struct {
		mu sync.Mutex
		s  *Semaphore
	}
	open := func(i int) *Semaphore {
		var s *Semaphore
		opts := []Option{WithCapacity(4), WithTTL(endsTTL), WithClientName(fmt.Sprintf("h%d", i))}
		if i%2 == 1 {
			opts = append(opts, WithBlocks(2))
		}
		to := eps
		if i >= reopened {
			to = cutEps
		}
		for s == nil {
			w.do("New", callTimeout+callSlack, func() {
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				defer cancel()
				var err error
				s, err = New(ctx, processClient(t, to...), name, opts...)
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					assert.NoError(t, ignoreRPC(err), "New fails only by its context or a member down")
				}
			})
		}
		return s
	}
	slots := make([]*slot, reopened+2)
	for i := range slots {
		slots[i] = &slot{s: open(i)}
	}
	closeSlot := func(sl *slot) {
		sl.mu.Lock()
		s := sl.s
		sl.mu.Unlock()
		w.do("Close", endsTTL+callSlack, func() { assert.NoError(t, ignoreRPC(s.Close())) })
	}
	defer func() {
		for _, sl := range slots {
			closeSlot(sl)
		}
	}()

	stop := make(chan struct{})
	var grants atomic.Int64
	slotGrants := make([]atomic.Int64, len(slots))
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopCallers := func() {
		stopOnce.Do(func() {
			close(stop)
			wg.Wait()
		})
	}
	for i := range 2 * len(slots) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sl := slots[i%len(slots)]
			for r := 0; ; r++ {
				select {
				case <-stop:
					return
				default:
				}
				sl.mu.Lock()
				s := sl.s
				sl.mu.Unlock()
				var u *Units
				w.do("Acquire", callTimeout+callSlack, func() {
					ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
					defer cancel()
					var err error
					u, err = s.Acquire(ctx, int64(1+(i+r)%2))
					if err != nil && !errors.Is(err, ErrLost) && !errors.Is(err, ErrClosed) && !errors.Is(err, semaphore.ErrTimedOut) {
						assert.NoError(t, ignoreRPC(err), "Acquire")
					}
				})
				if u == nil {
					continue
				}
				log.add(u)
				grants.Add(1)
				slotGrants[i%len(slots)].Add(1)
				time.Sleep(time.Millisecond)
				w.do("Release", callTimeout+callSlack, func() {
					ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
					defer cancel()
					if err := u.Release(ctx); err != nil && !errors.Is(err, ErrLost) {
						assert.NoError(t, ignoreRPC(err), "Release")
					}
				})
			}
		}()
	}
	defer stopCallers()

	progress := func(what string) {
		t.Helper()
		from := grants.Load()
		assert.Eventually(t, func() bool { return grants.Load() >= from+20 }, 90*time.Second, 20*time.Millisecond, "no progress %s", what)
	}
	reopen := func(i int) {
		closeSlot(slots[i])
		s := open(i)
		slots[i].mu.Lock()
		slots[i].s = s
		slots[i].mu.Unlock()
	}
	kill := func(p *etcdProc) { w.do("SIGKILL of a member", 10*time.Second, p.kill) }
	restart := func(p *etcdProc) {
		w.do("restart of a member", 90*time.Second, func() {
			p.start()
			waitHealthy(t, p)
		})
	}
	progress("at the start")
	for round := range 2 {
		l := leader(t, procs)
		kill(l)
		reopen(round % 4)
		progress("with the leader killed")
		restart(l)

		l = leader(t, procs)
		w.do("SIGSTOP of the leader", 10*time.Second, l.stop)
		reopen((round + 1) % 4)
		progress("with the leader stopped")
		l.cont()

		var f *etcdProc
		for _, p := range procs {
			if p != leader(t, procs) {
				f = p
			}
		}
		w.do("SIGSTOP of a follower", 10*time.Second, f.stop)
		time.Sleep(3 * endsTTL) // the time for leases to be lost
		reopen((round + 2) % 4)
		f.cont()
		progress("after a follower resumed")
		kill(f)
		reopen((round + 3) % 4)
		progress("with a follower killed")
		restart(f)
		progress("with every member back")

		for _, px := range pxs {
			px.hold(true, true)
		}
		time.Sleep(3 * endsTTL) // the time for the cut-off handles' leases to be lost
		progress("with two handles cut off")
		for _, px := range pxs {
			px.release()
			px.dropConns()
		}
		for i := reopened; i < len(slots); i++ {
			from := slotGrants[i].Load()
			assert.Eventually(t, func() bool { return slotGrants[i].Load() >= from+5 }, 90*time.Second, 20*time.Millisecond,
				"handle %d not served after the partition healed", i)
		}
	}
	stopCallers()
	n := checkHistory(t, processClient(t, eps...), name, log)
	t.Logf("%d grants in etcd's history", n)
}

// ignoreRPC returns nil for an error of an RPC etcd did not answer in time or
// at all (a member down), which a call may end with, and err otherwise.
func ignoreRPC(err error) error {
	if err != nil && classify(err) == rpcUnknown {
		return nil
	}
	return err
}

func TestCallWatch_ReportsACallPastItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &callWatch{logf: func(string, ...any) {}}
		w.do("quick", time.Second, func() {})
		w.do("slow", 10*time.Millisecond, func() { time.Sleep(50 * time.Millisecond) })
		require.Len(t, w.overruns, 2, "the slow call, reported while it ran and when it ended")
		assert.Contains(t, w.overruns[0], "slow still running after 10ms")
		assert.Contains(t, w.overruns[1], "slow ended after 50ms")
	})
}
