package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestAcquire_UncontendedGrantsAtOnceAndReleaseFrees(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	s := newSem(t, cli, testName(t), WithCapacity(3))
	log := &grantLog{}
	ctx := testCtx(t, 20*time.Second)

	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(u)
	assert.Equal(t, int64(2), u.Count())
	assert.Positive(t, u.Token())
	assert.Equal(t, u.Token(), u.req().grantRev, "granted at its creation revision")
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), st.Capacity)
	assert.Equal(t, int64(2), st.Held)
	require.Len(t, st.Holders, 1)
	assert.Equal(t, u.Token(), st.Holders[0].Token)

	require.NoError(t, u.Release(ctx))
	require.NoError(t, u.Release(ctx), "Release is idempotent")
	assert.Zero(t, u.Count())
	var nilUnits *Units
	assert.NoError(t, nilUnits.Release(ctx), "Release is nil-safe")
	st, err = s.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Held)
	assert.Empty(t, st.Holders)
	checkHistory(t, cli, testName(t), log)
}

// Contention and stress: 25 goroutines over 5 clients, weights 1-3, capacity 3,
// some giving up by timeout or cancellation, in any state of their wait.
func TestAcquire_Contention(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	const clients, perClient, rounds = 5, 5, 12
	sems := make([]*Semaphore, clients)
	for i := range sems {
		sems[i] = newSem(t, newClient(t, ep), name, WithCapacity(3), WithClientName(fmt.Sprintf("c%d", i)))
	}
	ctx := testCtx(t, 3*time.Minute)
	var inUse, peak, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for i := range clients * perClient {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := sems[i%clients]
			for r := range rounds {
				n := int64(1 + (i+r)%3)
				var u *Units
				var err error
				switch (i + r) % 4 {
				case 1: // a short timeout: may give up while queued, or race its grant
					u, err = s.AcquireTimeout(ctx, time.Duration(1+r%20)*time.Millisecond, n)
				case 2: // a cancellation from another goroutine
					cctx, cancel := context.WithCancel(ctx)
					go cancel()
					u, err = s.Acquire(cctx, n)
					cancel()
				default:
					u, err = s.Acquire(ctx, n)
				}
				if err != nil {
					if !errors.Is(err, semaphore.ErrTimedOut) && !errors.Is(err, context.Canceled) {
						assert.NoError(t, err)
						return
					}
					gaveUp.Add(1)
					continue
				}
				log.add(u)
				now := inUse.Add(n)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				assert.LessOrEqual(t, now, int64(3), "units in use")
				inUse.Add(-n)
				assert.NoError(t, u.Release(ctx))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(0), inUse.Load())
	// Every acquire that gave up left nothing: the queue drains to empty.
	require.Eventually(t, func() bool { return noQueueKeys(t, sems[0].sess.cli, name) }, 30*time.Second, 20*time.Millisecond)
	grants := checkHistory(t, sems[0].sess.cli, name, log)
	succeeded := clients*perClient*rounds - int(gaveUp.Load())
	t.Logf("%d grants to callers, %d calls gave up, %d grants by the rule", succeeded, gaveUp.Load(), grants)
	assert.Len(t, log.grants, succeeded)
	assert.GreaterOrEqual(t, grants, succeeded, "a grant that raced a give-up counts in the history only")
}

func TestAcquire_StrictFIFOLargeWaiterHoldsBackSmallOnes(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	a := newSem(t, newClient(t, ep), name, WithCapacity(3))
	b := newSem(t, newClient(t, ep), name)
	c := newSem(t, newClient(t, ep), name)
	ctx := testCtx(t, 30*time.Second)

	h, err := a.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(h)
	// b asks for 3: it must wait for h. c asks for 1 after b: 1 unit is free,
	// but c must not jump b.
	bDone := make(chan *Units, 1)
	go func() {
		u, err := b.Acquire(ctx, 3)
		assert.NoError(t, err)
		bDone <- u
	}()
	waitWaiters(t, a, 1)
	cDone := make(chan *Units, 1)
	go func() {
		u, err := c.Acquire(ctx, 1)
		assert.NoError(t, err)
		cDone <- u
	}()
	waitWaiters(t, a, 2)
	_, ok, err := c.TryAcquire(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok, "TryAcquire never jumps the queue")
	select {
	case <-cDone:
		t.Fatal("a small waiter jumped a large one")
	default:
	}
	require.NoError(t, h.Release(ctx))
	ub := <-bDone
	log.add(ub)
	select {
	case <-cDone:
		t.Fatal("c granted while b holds all units")
	default:
	}
	require.NoError(t, ub.Release(ctx))
	uc := <-cDone
	log.add(uc)
	assert.Less(t, ub.Token(), uc.Token(), "tokens follow the queue order")
	require.NoError(t, uc.Release(ctx))
	checkHistory(t, a.sess.cli, name, log)
}

func TestTryAcquire_TakesFreeUnitsAndNeverQueues(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	name := testName(t)
	s := newSem(t, cli, name, WithCapacity(2))
	log := &grantLog{}
	ctx := testCtx(t, 20*time.Second)
	u, ok, err := s.TryAcquire(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	log.add(u)
	_, ok, err = s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok, "no free units")
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Waiters, "a failed TryAcquire leaves no key")
	_, _, err = s.TryAcquire(ctx, 3)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	require.NoError(t, u.Release(ctx))
	u, ok, err = s.TryAcquire(ctx, 0)
	require.NoError(t, err)
	assert.True(t, ok, "zero units fit when nobody waits")
	log.add(u)
	require.NoError(t, u.Release(ctx))
	checkHistory(t, cli, name, log)
}

func TestAcquire_FailsAtOnce(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	name := testName(t)
	s := newSem(t, cli, name, WithCapacity(2))
	log := &grantLog{}
	ctx := testCtx(t, 20*time.Second)

	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Acquire(done, 1)
	assert.ErrorIs(t, err, context.Canceled, "context already done")
	_, err = s.Acquire(ctx, 3)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.ErrorContains(t, err, name)
	assert.ErrorContains(t, err, "3 units")
	u0, err := s.AcquireTimeout(ctx, 0, 1)
	require.NoError(t, err, "AcquireTimeout(0) succeeds when TryAcquire would")
	log.add(u0)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	_, err = s.AcquireTimeout(ctx, 0, 2)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	_, err = s.AcquireTimeout(ctx, 200*time.Millisecond, 2)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, u.Release(ctx))
	assert.Panics(t, func() { _, _ = s.Acquire(ctx, -1) })
	assert.Panics(t, func() { _, _ = s.Acquire(ctx, semaphore.MaxUnits+1) })
	require.NoError(t, s.Close())
	_, err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, ErrClosed)
	_, _, err = s.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, ErrClosed)
	assert.Eventually(t, func() bool { return noQueueKeys(t, cli, name) }, 10*time.Second, 20*time.Millisecond)
	checkHistory(t, cli, name, log)
}

func TestAcquire_CancelWhileWaitingLeavesNoKey(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(1))
	b := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(wctx, 1)
		errc <- err
	}()
	waitWaiters(t, a, 1)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	require.Eventually(t, func() bool { return waiters(t, a) == 0 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, h.Release(ctx))
	u, err := b.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	require.NoError(t, u.Release(ctx))
	checkHistory(t, a.sess.cli, name, log)
}

// A cancellation racing a grant: whatever the caller sees, the units are never
// lost: a later acquire is granted.
func TestAcquire_CancelRacingGrantPassesUnitsOn(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(1))
	b := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, 2*time.Minute)
	for i := range 15 {
		h, err := a.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(h)
		wctx, cancel := context.WithCancel(ctx)
		res := make(chan *Units, 1)
		go func() {
			u, err := b.Acquire(wctx, 1)
			if err != nil {
				assert.ErrorIs(t, err, context.Canceled)
			}
			res <- u
		}()
		waitWaiters(t, a, 1)
		// Release and cancel at nearly the same time, in varying order.
		if i%2 == 0 {
			go cancel()
			require.NoError(t, h.Release(ctx))
		} else {
			go func() { assert.NoError(t, h.Release(ctx)) }()
			cancel()
		}
		if u := <-res; u != nil {
			log.add(u)
			require.NoError(t, u.Release(ctx))
		}
		// The units pass on: a fresh acquire gets them.
		u, err := a.Acquire(ctx, 1)
		require.NoError(t, err, "round %d", i)
		log.add(u)
		require.NoError(t, u.Release(ctx))
	}
	require.Eventually(t, func() bool { return noQueueKeys(t, a.sess.cli, name) }, 10*time.Second, 10*time.Millisecond)
	checkHistory(t, a.sess.cli, name, log)
}

func TestHolderCrash_RevokedLeaseGrantsNextPromptly(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(1))
	b := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	got := make(chan *Units, 1)
	go func() {
		u, err := b.Acquire(ctx, 1)
		assert.NoError(t, err)
		got <- u
	}()
	waitWaiters(t, a, 1)
	start := time.Now()
	require.NoError(t, a.Close(), "a crash that still revokes its lease")
	u := <-got
	t.Logf("revoked lease to next grant: %v", time.Since(start))
	log.add(u)
	require.NoError(t, u.Release(ctx))
	checkHistory(t, b.sess.cli, name, log)
}

func TestHolderCrash_UnrevokedLeaseGrantsNextAfterTTL(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	acli := newClient(t, ep)
	a := newSem(t, acli, name, WithCapacity(1), WithTTL(time.Second))
	b := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	got := make(chan *Units, 1)
	go func() {
		u, err := b.Acquire(ctx, 1)
		assert.NoError(t, err)
		got <- u
	}()
	waitWaiters(t, a, 1)
	// The holder's process dies: its connection closes, nothing is revoked.
	start := time.Now()
	require.NoError(t, acli.Close())
	u := <-got
	t.Logf("unrevoked lease (TTL %v) to next grant: %v", h.req().lease.ttl, time.Since(start))
	log.add(u)
	<-h.Lost()
	assert.ErrorIs(t, h.Err(), ErrLost)
	require.NoError(t, u.Release(ctx))
	checkHistory(t, b.sess.cli, name, log)
}

func TestWithSemaphore_ReleasesAfterFn(t *testing.T) {
	log := &grantLog{}
	checkHistoryAtEnd(t, sharedEndpoint(t), testName(t), log)
	cli := newClient(t, sharedEndpoint(t))
	s := newSem(t, cli, testName(t), WithCapacity(1))
	ctx := testCtx(t, 20*time.Second)
	boom := errors.New("boom")
	err := WithSemaphore(ctx, s, 1, func(ctx context.Context) error {
		log.addHeld(s)
		assert.Equal(t, 0, waiters(t, s))
		return boom
	})
	assert.ErrorIs(t, err, boom)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err, "the units were released")
	log.add(u)
	require.NoError(t, u.Release(ctx))
}

func TestMany_WaitersCostNoExtraRPCsPerRelease(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	const waiting = 200
	a := newSem(t, newClient(t, ep), name, WithCapacity(1))
	b := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, 2*time.Minute)
	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	got := make(chan *Units, waiting)
	for range waiting {
		go func() {
			u, err := b.Acquire(ctx, 1)
			assert.NoError(t, err)
			got <- u
		}()
	}
	waitWaiters(t, a, waiting)
	before := rpcCount(t)
	require.NoError(t, h.Release(ctx))
	for range waiting {
		u := <-got
		log.add(u)
		require.NoError(t, u.Release(ctx))
	}
	// One delete per release and nothing else: waiters learn from the shared
	// watch. Other tests may run RPCs concurrently only if run in parallel,
	// which this package does not do.
	rpcs := rpcCount(t) - before
	t.Logf("%d releases cost %d RPCs on the server", waiting+1, rpcs)
	assert.LessOrEqual(t, rpcs, int64(waiting+1)+20, "no herd of RPCs per release")
	checkHistory(t, a.sess.cli, name, log)
}

// waiters returns the number of waiters s sees, as of now.
func waiters(t testing.TB, s *Semaphore) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	return len(st.Waiters)
}

// waitWaiters waits until s sees n waiters. The bound is a minute and a
// half: hundreds of acquires under the race detector on a machine whose cores
// are busy can take tens of seconds to be written.
func waitWaiters(t testing.TB, s *Semaphore, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return waiters(t, s) == n }, 90*time.Second, 25*time.Millisecond, "waiting for %d waiters", n)
}

func noQueueKeys(t testing.TB, cli *clientv3.Client, name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, keysOf(name).qprefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Count == 0
}

// rpcCount returns the unary RPCs the embedded server has started.
func rpcCount(t testing.TB) int64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "grpc_server_started_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "grpc_type" && l.GetValue() == "unary" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	require.Positive(t, n, "the server counts its RPCs")
	return int64(n)
}

// The mirror moves only with the semaphore's own keys; a read that must catch
// up with the cluster's latest revision still returns when the last writes
// were another semaphore's.
func TestStats_CatchesUpWhenAnotherSemaphoreWroteLast(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	x := newSem(t, cli, testName(t)+"-x", WithCapacity(1))
	y := newSem(t, cli, testName(t)+"-y", WithCapacity(1))
	ctx := testCtx(t, 20*time.Second)
	for range 3 {
		u, err := y.Acquire(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, u.Release(ctx))
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := x.Stats(sctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Capacity)
	u, ok, err := x.TryAcquire(sctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, u.Release(ctx))
}

// Close gives back every unit of the handle: releasing them afterwards, or
// while Close runs, is not a loss, whichever of the watch's deletion event and
// the Release comes first.
func TestClose_ReleaseAfterCloseReturnsNil(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	name := testName(t)
	ctx := testCtx(t, time.Minute)
	for i := range 30 {
		s, err := New(ctx, cli, name, WithCapacity(2))
		require.NoError(t, err)
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		v, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		if i%3 == 2 {
			released := make(chan error, 1)
			go func() { released <- u.Release(ctx) }()
			require.NoError(t, s.Close())
			assert.NoError(t, <-released, "round %d: Release during Close", i)
		} else {
			require.NoError(t, s.Close())
		}
		assert.NoError(t, u.Release(ctx), "round %d: Release after Close", i)
		assert.NoError(t, v.Return(ctx, 1), "round %d: Return after Close", i)
		assert.NoError(t, u.Err(), "round %d: not lost", i)
		assert.Zero(t, u.Count(), "round %d", i)
		select {
		case <-u.Lost():
			t.Fatalf("round %d: Lost closed by Close", i)
		default:
		}
	}
	require.Eventually(t, func() bool { return noQueueKeys(t, cli, name) }, 10*time.Second, 20*time.Millisecond)
}

// After Close every call of the handle fails with ErrClosed, except the ones
// that give units back (nil: Close gave them back), Name and Close itself.
func TestClose_IsTerminalAtEveryEntryPoint(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	name := testName(t)
	ctx := testCtx(t, 20*time.Second)
	s, err := New(ctx, cli, name, WithCapacity(1))
	require.NoError(t, err)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	waiter := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, 1)
		waiter <- err
	}()
	waitWaiters(t, s, 1)
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-waiter, ErrClosed, "a waiter fails with ErrClosed")
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.Equal(t, name, s.Name())
	assert.NoError(t, u.Release(ctx))
	closed := map[string]func() error{
		"Acquire": func() error { _, err := s.Acquire(ctx, 1); return err },
		"AcquireTimeout": func() error {
			_, err := s.AcquireTimeout(ctx, time.Second, 1)
			return err
		},
		"AcquireTimeout(0)": func() error {
			_, err := s.AcquireTimeout(ctx, 0, 1)
			return err
		},
		"TryAcquire":    func() error { _, _, err := s.TryAcquire(ctx, 1); return err },
		"Stats":         func() error { _, err := s.Stats(ctx); return err },
		"Resize":        func() error { return s.Resize(ctx, 3) },
		"Break":         func() error { return s.Break(ctx, errors.New("x")) },
		"Repair":        func() error { return s.Repair(ctx) },
		"Drain":         func() error { return s.Drain(ctx) },
		"WithSemaphore": func() error { return WithSemaphore(ctx, s, 1, func(context.Context) error { return nil }) },
	}
	for op, call := range closed {
		err := call()
		assert.ErrorIs(t, err, ErrClosed, op)
		assert.ErrorContains(t, err, fmt.Sprintf("etcdsem %q", name), op)
	}
	// The semaphore itself is untouched: a new handle sees capacity 1, not broken.
	s2 := newSem(t, cli, name)
	st, err := s2.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Capacity)
	assert.False(t, st.Broken)
}

// Granting the handle's lease holds back no other call: while the grant waits
// on an unreachable etcd, Stats ends by its own deadline and Close by its
// bound, and Close ends the acquire that waits for the grant.
func TestLease_GrantHoldsBackNoOtherCall(t *testing.T) {
	px := newProxy(t, sharedEndpoint(t))
	cli, inFlight := countingClient(t, px.endpoint())
	s, err := New(testCtx(t, 10*time.Second), cli, testName(t), WithCapacity(1), WithTTL(2*time.Second))
	require.NoError(t, err)
	px.hold(true, true)
	defer px.release()
	acquired := make(chan error, 1)
	go func() {
		_, err := s.Acquire(context.Background(), 1) // the first acquire grants the lease
		acquired <- err
	}()
	waitInFlight(t, inFlight, 1)

	stats := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := s.Stats(ctx)
		stats <- err
	}()
	select {
	case err := <-stats:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		t.Logf("Stats with a 1s deadline returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Error("Stats with a 1s deadline still waits 10s later")
	}
	closed := make(chan error, 1)
	start = time.Now()
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		assert.NoError(t, err, "no lease yet: nothing to revoke")
		t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Error("Close still waits 10s later, past its bound of the lease TTL (2s)")
	}
	select {
	case err := <-acquired:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Error("Close did not end the acquire waiting for the lease")
	}
}
