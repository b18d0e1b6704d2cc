package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/fulltest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 5*time.Millisecond, what)
}

func TestBlocks_GrantsLocallyFromOneBlock(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(8), WithBlocks(4))
	ctx := testCtx(t, 20*time.Second)

	var us []*Units
	for range 4 {
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(u)
		us = append(us, u)
	}
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Len(t, st.Holders, 1, "four grants of one unit come from one block of 4")
	assert.Equal(t, int64(4), st.Holders[0].Units)
	for i, u := range us {
		assert.Equal(t, st.Holders[0].Token, u.Token(), "the token names the block")
		assert.Equal(t, int64(1), u.Count())
		if i > 0 {
			assert.Greater(t, u.Sequence(), us[i-1].Sequence())
		}
	}
	for _, u := range us {
		require.NoError(t, u.Release(ctx))
		assert.Zero(t, u.Count())
		require.NoError(t, u.Release(ctx), "Release is idempotent")
	}
}

// blockUnits returns the units of s's blocks as etcd holds them (their keys'
// weights), from s's mirror once it has caught up.
func blockUnits(t *testing.T, s *Semaphore) (held int64, blocks int) {
	t.Helper()
	st, err := s.Stats(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	for _, e := range st.Holders {
		if e.Client == s.clientTag {
			held += e.Units
			blocks++
		}
	}
	return held, blocks
}

func TestBlocks_AnotherHandleWaitingGetsTheFreeUnitsAtOnce(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	a := newSem(t, newClient(t, ep), name, WithCapacity(4), WithBlocks(4), WithClientName("a"))
	b := newSem(t, newClient(t, ep), name, WithBlocks(4), WithClientName("b"))
	ctx := testCtx(t, 20*time.Second)

	ua, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(ua)
	held, _ := blockUnits(t, a)
	require.Equal(t, int64(4), held, "a took a whole block")
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ub, err := b.Acquire(bctx, 3) // waits in etcd until a gives its 3 free units back
	if err != nil {
		t.Log(a.debugState(), a.pool.debugState(), b.debugState(), b.pool.debugState())
	}
	require.NoError(t, err)
	log.add(ub)
	held, _ = blockUnits(t, a)
	assert.Equal(t, int64(1), held, "a kept the unit its caller holds")
	assert.Equal(t, int64(1), ua.Count(), "a's holder was not revoked")
	assert.Greater(t, ub.Token(), ua.Token(), "b's block orders after a's")
	require.NoError(t, ua.Release(ctx))
	require.NoError(t, ub.Release(ctx))
}

func TestBlocks_IdleUnitsGoBack(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(4), WithBlocks(2))
	ctx := testCtx(t, 20*time.Second)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	require.NoError(t, u.Release(ctx))
	waitFor(t, "the idle block goes back", func() bool {
		held, _ := blockUnits(t, s)
		return held == 0
	})
}

func TestBlocks_BreakFailsWaitersAndDrainEnds(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(2), WithBlocks(2))
	admin := newSem(t, newClient(t, ep), name)
	ctx := testCtx(t, 20*time.Second)
	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(u)
	waitErr := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, 1)
		waitErr <- err
	}()
	waitFor(t, "the caller waits", func() bool { return localWaiters(s) == 1 })

	require.NoError(t, admin.Break(ctx, errors.New("maintenance")))
	err = <-waitErr
	assert.ErrorIs(t, err, semaphore.ErrBroken)
	assert.ErrorContains(t, err, "maintenance")
	_, err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, semaphore.ErrBroken, "a later acquire fails too")

	drained := make(chan error, 1)
	go func() { drained <- admin.Drain(ctx) }()
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v while a caller holds units", err)
	default:
	}
	assert.Equal(t, int64(2), u.Count(), "holders keep their units while broken")
	require.NoError(t, u.Release(ctx))
	require.NoError(t, <-drained, "the released units go back to etcd, so Drain ends")
	require.NoError(t, admin.Repair(ctx))
	u, err = s.Acquire(ctx, 1)
	require.NoError(t, err, "Repair lets acquires in again")
	log.add(u)
	require.NoError(t, u.Release(ctx))
}

func TestBlocks_ResizeShrinksBlocksWithoutRevoking(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(4), WithBlocks(4))
	ctx := testCtx(t, 20*time.Second)
	var us []*Units
	for range 3 {
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(u)
		us = append(us, u)
	}
	require.NoError(t, s.Resize(ctx, 2))
	waitFor(t, "the free unit goes back", func() bool {
		held, _ := blockUnits(t, s)
		return held == 3
	})
	for _, u := range us {
		assert.Equal(t, int64(1), u.Count(), "no holder is revoked")
	}
	require.NoError(t, us[0].Release(ctx))
	if !assert.Eventually(t, func() bool {
		held, _ := blockUnits(t, s)
		return held == 2
	}, 10*time.Second, 5*time.Millisecond, "units coming back go back until the blocks fit") {
		t.Log(s.debugState(), s.pool.debugState())
	}
	_, err := s.Acquire(ctx, 3)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	for _, u := range us[1:] {
		require.NoError(t, u.Release(ctx))
	}
}

func TestBlocks_CloseFailsWaitersAndReleaseAfterIsNil(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	cli := newClient(t, ep)
	s, err := New(testCtx(t, 10*time.Second), cli, name, WithCapacity(1), WithBlocks(1))
	require.NoError(t, err)
	ctx := testCtx(t, 20*time.Second)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	waitErr := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, 1)
		waitErr <- err
	}()
	waitFor(t, "the caller waits", func() bool { return localWaiters(s) == 1 })
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-waitErr, ErrClosed)
	assert.NoError(t, u.Release(ctx), "Close gave the units back")
	assert.Zero(t, u.Count())
	select {
	case <-u.Lost():
		t.Fatal("Close closed Lost")
	default:
	}
	assert.NoError(t, u.Err())
	_, err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, ErrClosed)
	_, _, err = s.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, noQueueKeys(t, cli, name), "Close revoked the lease of the blocks")
}

func TestBlocks_TryAcquireTakesABlockWithoutQueueing(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	a := newSem(t, newClient(t, ep), name, WithCapacity(3), WithBlocks(2))
	b := newSem(t, newClient(t, ep), name, WithBlocks(2))
	ctx := testCtx(t, 20*time.Second)
	u, ok, err := a.TryAcquire(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	log.add(u)
	held, blocks := blockUnits(t, a)
	assert.Equal(t, int64(2), held, "TryAcquire took a block of the block size")
	assert.Equal(t, 1, blocks)
	u2, ok, err := a.TryAcquire(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok, "the block's other unit is free")
	log.add(u2)
	_, ok, err = b.TryAcquire(ctx, 2)
	require.NoError(t, err)
	assert.False(t, ok, "one unit is left in the fleet")
	assert.Zero(t, waiters(t, a), "a failed TryAcquire leaves no key")
	u3, ok, err := b.TryAcquire(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok, "a block of the one unit left")
	log.add(u3)
	_, _, err = b.TryAcquire(ctx, 4)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	for _, x := range []*Units{u, u2, u3} {
		require.NoError(t, x.Release(ctx))
	}
}

func TestBlocks_ReturnGivesBackPartOfALocalGrant(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(4), WithBlocks(4))
	ctx := testCtx(t, 20*time.Second)
	u, err := s.Acquire(ctx, 3)
	require.NoError(t, err)
	log.add(u)
	require.NoError(t, u.Return(ctx, 2))
	assert.Equal(t, int64(1), u.Count())
	err = u.Return(ctx, 2)
	assert.ErrorIs(t, err, semaphore.ErrInsufficientUnits)
	u2, ok, err := s.TryAcquire(ctx, 3)
	require.NoError(t, err)
	require.True(t, ok, "the returned units are free in the block")
	log.add(u2)
	require.NoError(t, u.Return(ctx, 1))
	assert.Zero(t, u.Count(), "returning all is Release")
	require.NoError(t, u2.Release(ctx))
}

// The headline guarantee in block mode: when a handle is cut off from etcd,
// Lost closes for every local holder of its blocks before anyone else can be
// granted the blocks' units; its waiters fail with ErrLost; once etcd is back
// it takes new blocks, with tokens after the lost ones.
func TestBlocks_LostClosesForEveryLocalHolderBeforeTheNextGrant(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	px := newProxy(t, ep)
	a := newSem(t, newClient(t, px.endpoint()), name, WithCapacity(2), WithBlocks(2),
		WithTTL(2*time.Second), WithSafetyMargin(500*time.Millisecond))
	t.Cleanup(px.release) // before a's Close, which needs the server's replies
	b := newSem(t, newClient(t, ep), name)
	ctx := testCtx(t, time.Minute)

	var hs []*Units
	for range 2 {
		u, err := a.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(u)
		hs = append(hs, u)
	}
	waitErr := make(chan error, 1)
	go func() {
		_, err := a.Acquire(ctx, 1)
		waitErr <- err
	}()
	waitFor(t, "a's caller waits", func() bool { return localWaiters(a) == 1 })
	granted := make(chan time.Time, 1)
	var next *Units
	go func() {
		u, err := b.Acquire(ctx, 2)
		assert.NoError(t, err)
		next = u
		granted <- time.Now()
	}()
	waitWaiters(t, b, 1)

	px.hold(true, true)
	var lostAt [2]time.Time
	for i, h := range hs {
		select {
		case <-h.Lost():
			lostAt[i] = time.Now()
		case <-ctx.Done():
			t.Fatal("Lost never closed")
		}
	}
	grantedAt := <-granted
	log.add(next)
	for i, h := range hs {
		assert.True(t, lostAt[i].Before(grantedAt), "holder %d told %v after the next grant", i, lostAt[i].Sub(grantedAt))
		assert.ErrorIs(t, h.Err(), ErrLost)
		assert.ErrorIs(t, h.Release(ctx), ErrLost, "releasing lost units reports the loss")
		assert.Zero(t, h.Count())
	}
	t.Logf("Lost closed %v before the next grant", grantedAt.Sub(lostAt[0]).Round(time.Millisecond))
	assert.ErrorIs(t, <-waitErr, ErrLost, "the waiter fails with the loss")

	px.release()
	px.dropConns()
	require.NoError(t, next.Release(ctx))
	u, err := a.Acquire(ctx, 1)
	require.NoError(t, err, "a takes a new block once etcd is back")
	log.add(u)
	assert.Greater(t, u.Token(), hs[0].Token(), "the new block's token orders after the lost one")
	require.NoError(t, u.Release(ctx))
}

// Stress: handles in block mode and one in plain mode share a semaphore;
// callers of weights 1 to 3 come and go, some giving up. At every moment the
// units held by callers of every handle are at most the capacity, and the
// history checker finds etcd's history clean.
func TestBlocks_StressKeepsTheBoundAcrossHandles(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	const capacity, rounds = 6, 25
	sems := []*Semaphore{
		newSem(t, newClient(t, ep), name, WithCapacity(capacity), WithBlocks(2), WithClientName("b0")),
		newSem(t, newClient(t, ep), name, WithBlocks(3), WithClientName("b1")),
		newSem(t, newClient(t, ep), name, WithBlocks(1), WithClientName("b2")),
		newSem(t, newClient(t, ep), name, WithClientName("plain")),
	}
	ctx := testCtx(t, 2*time.Minute)
	var inUse, peak atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := sems[i%len(sems)]
			for r := range rounds {
				n := int64(1 + (i+r)%3)
				actx, cancel := context.WithTimeout(ctx, time.Duration(50+(i*r)%200)*time.Millisecond)
				u, err := s.Acquire(actx, n)
				cancel()
				if err != nil {
					assert.ErrorIs(t, err, semaphore.ErrTimedOut)
					continue
				}
				log.add(u)
				now := inUse.Add(n)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				assert.LessOrEqual(t, now, int64(capacity), "units held across handles")
				runtime.Gosched()
				inUse.Add(-n)
				assert.NoError(t, u.Release(ctx))
			}
		}()
	}
	wg.Wait()
	t.Logf("peak %d of %d units held", peak.Load(), capacity)
	assert.Positive(t, peak.Load())
}

func TestWithBlocks_PanicsOnASizeOutOfRange(t *testing.T) {
	for _, size := range []int64{0, -1, semaphore.MaxUnits + 1} {
		assert.PanicsWithValue(t, fmt.Sprintf("etcdsem: WithBlocks(%d): block size out of range [1, %d]", size, int64(semaphore.MaxUnits)),
			func() { WithBlocks(size) }, "size %d", size)
	}
	assert.NotPanics(t, func() { WithBlocks(1) })
	assert.NotPanics(t, func() { WithBlocks(semaphore.MaxUnits) })
}

func TestBlocks_EdgesOfTheRequest(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(2), WithBlocks(1))
	ctx := testCtx(t, 20*time.Second)

	u, err := s.Acquire(ctx, 0)
	require.NoError(t, err, "0 units are granted at once, with no block")
	log.add(u)
	assert.Zero(t, u.Count())
	require.NoError(t, u.Release(ctx))

	u, err = s.Acquire(ctx, 2)
	require.NoError(t, err, "a request above the block size takes a block of its size")
	log.add(u)
	require.NoError(t, u.Release(ctx))

	_, err = s.Acquire(ctx, 3)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Acquire(done, 1)
	assert.ErrorIs(t, err, context.Canceled, "a done context fails first")
	_, err = s.Acquire(done, 3)
	assert.ErrorIs(t, err, context.Canceled, "a done context fails before too large")
	assert.Panics(t, func() { _, _ = s.Acquire(ctx, -1) })

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	held, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(held)
	_, err = s.Acquire(short, 1)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut, "a waiter times out")
	assert.Zero(t, localWaiters(s), "and leaves the queue")
	require.NoError(t, held.Release(ctx))
}

// Block mode's errors carry how the acquire ended, as plain mode's do.
func TestBlocks_ErrorsCarryTheAcquiresOutcome(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(1), WithBlocks(1))
	admin := newSem(t, newClient(t, ep), name)
	ctx := testCtx(t, 20*time.Second)
	outcome := func(err error) semaphore.Outcome {
		t.Helper()
		o, ok := semaphore.OutcomeOf(err)
		require.True(t, ok, "%v carries an outcome", err)
		return o
	}

	_, err := s.Acquire(ctx, 2)
	assert.Equal(t, semaphore.TooLarge, outcome(err))
	assert.ErrorContains(t, err, `etcdsem "`+name+`": acquire 2 units: more than the capacity 1`)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(short, 1)
	assert.Equal(t, semaphore.TimedOut, outcome(err))
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Acquire(gone, 1)
	assert.Equal(t, semaphore.Cancelled, outcome(err))

	waitErr := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, 1)
		waitErr <- err
	}()
	waitFor(t, "the caller waits", func() bool { return localWaiters(s) == 1 })
	require.NoError(t, admin.Break(ctx, errors.New("maintenance")))
	err = <-waitErr
	assert.Equal(t, semaphore.Broken, outcome(err), "a waiter failed by Break")
	_, _, err = s.TryAcquire(ctx, 1)
	assert.Equal(t, semaphore.Broken, outcome(err))
	require.NoError(t, u.Release(ctx))
	require.NoError(t, admin.Repair(ctx))
}

// Close ends every block-mode call that waits on etcd with ErrClosed, however
// long the call's own context would let it wait: a call waiting for a block,
// and a call for more than the capacity the handle last saw, which reads
// etcd to decide.
func TestBlocks_CloseEndsEveryCallInFlight(t *testing.T) {
	ep := sharedEndpoint(t)
	px := newProxy(t, ep)
	cli, inFlight := countingClient(t, px.endpoint())
	s, err := New(testCtx(t, 10*time.Second), cli, testName(t), WithCapacity(1), WithBlocks(1), WithTTL(2*time.Second))
	require.NoError(t, err)
	ctx := testCtx(t, time.Minute)
	calls := map[string]func() error{
		"Acquire for a block":  func() error { _, err := s.Acquire(ctx, 1); return err },
		"Acquire over the cap": func() error { _, err := s.Acquire(ctx, 2); return err },
		"TryAcquire over cap":  func() error { _, _, err := s.TryAcquire(ctx, 2); return err },
	}
	closeEndsCalls(t, s, px, calls, func() bool { return inFlight.Load() >= 3 && localWaiters(s) == 1 })
}

// A TryAcquire that asks etcd for a whole block, from a view of the capacity
// a shrinking Resize has just made stale, still takes the units it asked for
// when they fit: the block no longer fitting is not the caller's failure.
func TestBlocks_TryAcquireFitsAfterAShrinkItHasNotSeen(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(8), WithBlocks(4))
	admin := newSem(t, newClient(t, ep), name)
	ctx := testCtx(t, 20*time.Second)
	require.NoError(t, admin.Resize(ctx, 3))
	s.pool.seen.Store(&seen{rev: s.pool.seen.Load().rev, capacity: 8}) // the manager has not looked since
	u, ok, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err, "1 unit fits the capacity of 3")
	require.True(t, ok)
	log.add(u)
	assert.Equal(t, int64(1), u.Count())
	require.NoError(t, u.Release(ctx))
}

// A block request etcd refuses for good (here too large, by the client label
// every key carries) ends the callers waiting for it with etcd's error, as
// plain mode's Acquire does, instead of asking again until their contexts end.
func TestBlocks_BlockRequestEtcdRefusesEndsTheWaitingCalls(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	s := newSem(t, cli, testName(t), WithCapacity(2), WithBlocks(1), WithClientName(strings.Repeat("c", 1700<<10)))
	ctx := testCtx(t, 20*time.Second)
	_, err := s.Acquire(ctx, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, rpctypes.ErrRequestTooLarge)
	assert.NoError(t, ctx.Err(), "ended by etcd's refusal, not by the context")
	assert.Contains(t, err.Error(), ": acquire 1 unit: refused for good: etcdserver: request is too large")
	_, ok := semaphore.OutcomeOf(err)
	assert.False(t, ok, "etcd's refusal is no outcome of the semaphore")
	assert.Zero(t, localWaiters(s), "the caller left the queue")
	assert.True(t, noQueueKeys(t, cli, s.Name()), "nothing was written")
}

// cancelAfterCheck is a context whose first Err reports it live and then
// cancels it: the cancellation lands after a call's first look at its context
// and before its grant.
type cancelAfterCheck struct {
	context.Context
	cancel context.CancelFunc
	once   sync.Once
}

func (c *cancelAfterCheck) Err() error {
	err := c.Context.Err()
	c.once.Do(c.cancel)
	return err
}

// A call whose context ends before its local grant, with units free in the
// blocks, fails with the context's error and gives the units back, as the
// core semaphore's Acquire does: no grant counted, no holder left.
func TestBlocks_ACancellationBeforeTheLocalGrantWins(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(2), WithBlocks(2))
	ctx := testCtx(t, 20*time.Second)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	granted := s.Reading().Acquired

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	v, err := s.Acquire(&cancelAfterCheck{Context: cctx, cancel: cancel}, 1)
	require.ErrorIs(t, err, context.Canceled, "the context ended before the grant")
	assert.Nil(t, v)
	assert.Equal(t, granted, s.Reading().Acquired, "no grant counted")
	ep0 := s.pool.ep.Load()
	assert.Equal(t, int64(1), ep0.inUse.Load(), "units held")
	assert.Equal(t, int64(1), ep0.holds.Load(), "holders")
	require.NoError(t, u.Release(ctx))
}

// A TryAcquire that takes a block from etcd does not take units of it ahead
// of a caller of its handle that started waiting while the block was asked
// for and does not fit in it: it never jumps the handle's queue.
func TestBlocks_TryAcquireDoesNotJumpACallerThatWaitsForTheNewBlock(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	ctx := testCtx(t, 30*time.Second)
	var (
		s       *Semaphore
		hooked  atomic.Int32 // 1: armed; 2: TryAcquire's sent, later ones wait for tried
		waiting = make(chan error, 1)
		tried   = make(chan struct{})
	)
	wctx, cancelWaiter := context.WithCancel(ctx)
	defer cancelWaiter()
	// The first transaction once armed is TryAcquire's block: a caller of 3
	// units starts waiting before it is sent. Later transactions (the
	// handle's request of a block for that caller) wait until TryAcquire
	// has returned.
	hook := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method == "/etcdserverpb.KV/Txn" && hooked.Load() > 0 {
			if hooked.CompareAndSwap(1, 2) {
				go func() {
					u, err := s.Acquire(wctx, 3)
					if err == nil {
						log.add(u)
						err = u.Release(ctx)
					}
					waiting <- err
				}()
				waitFor(t, "the caller waits", func() bool { return localWaiters(s) == 1 })
			} else {
				select {
				case <-tried:
				case <-ctx.Done():
				}
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{ep},
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(hook)},
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	s = newSem(t, cli, name, WithCapacity(4), WithBlocks(2))

	hooked.Store(1)
	u, ok, err := s.TryAcquire(ctx, 1) // asks etcd for a block of 2
	close(tried)
	require.NoError(t, err)
	if ok {
		log.add(u)
		require.NoError(t, u.Release(ctx))
	}
	assert.False(t, ok, "a caller waits for the block's units")
	cancelWaiter()
	if err := <-waiting; err != nil {
		assert.ErrorIs(t, err, context.Canceled)
	}
}

// A TryAcquire never takes units a waiting caller of its handle is owed:
// with one caller waiting for more units than are free in the handle's
// blocks, a TryAcquire (or an AcquireTimeout that does not wait) of fewer
// units than are free fails, and the waiter is served first once units come
// back.
func TestBlocks_TryAcquireNeverTakesUnitsAWaiterOfItsHandleIsOwed(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(4), WithBlocks(4))
	ctx := testCtx(t, 20*time.Second)

	held, err := s.Acquire(ctx, 2) // takes a block of the whole capacity: 2 units stay free
	require.NoError(t, err)
	log.add(held)
	waiting := startWaiting(ctx, s, 3)
	waitFor(t, "the caller of 3 units waits", func() bool { return localWaiters(s) == 1 })

	u, ok, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	if ok {
		log.add(u)
		require.NoError(t, u.Release(ctx))
	}
	assert.False(t, ok, "1 of the 2 free units: the waiting caller is owed them")
	_, err = s.AcquireTimeout(ctx, 0, 2)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut, "an acquire that does not wait does not take them either")

	require.NoError(t, held.Release(ctx))
	w := <-waiting
	require.NotNil(t, w, "the waiter is served once the units come back")
	log.add(w)
	assert.Equal(t, int64(3), w.Count())
	u, ok, err = s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok, "with nobody waiting, a TryAcquire takes the unit left")
	log.add(u)
	require.NoError(t, u.Release(ctx))
	require.NoError(t, w.Release(ctx))
}

// At capacity 0 a block-mode handle grants 0 units and refuses more as too
// large, until a Resize lets them in; AcquireTimeout with a zero or negative
// duration never waits: it is granted when TryAcquire would be, and times out
// otherwise.
func TestBlocks_CapacityZeroAndTimeoutsThatDoNotWait(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithBlocks(2))
	ctx := testCtx(t, 20*time.Second)

	_, err := s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge, "capacity 0")
	_, _, err = s.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	u, err := s.Acquire(ctx, 0)
	require.NoError(t, err, "0 units fit any capacity")
	log.add(u)
	require.NoError(t, u.Release(ctx))

	require.NoError(t, s.Resize(ctx, 2))
	for _, d := range []time.Duration{0, -time.Second} {
		u, err := s.AcquireTimeout(ctx, d, 1)
		require.NoError(t, err, "%v: a unit is free", d)
		log.add(u)
		v, err := s.AcquireTimeout(ctx, d, 2)
		assert.ErrorIs(t, err, semaphore.ErrTimedOut, "%v: only one unit is free", d)
		assert.Nil(t, v)
		assert.Zero(t, localWaiters(s), "%v: it never waited", d)
		require.NoError(t, u.Release(ctx))
	}
}

// Stress: callers of one block-mode handle come and go, many with contexts
// that end at about the time of their grant. Afterwards the counts are exact:
// a grant counted for every call that returned units and none other, no
// holder and no unit in use left, and every unit of the blocks free.
func TestBlocks_StressCancellationsKeepTheCountsExact(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	s := newSem(t, newClient(t, ep), name, WithCapacity(4), WithBlocks(2))
	ctx := testCtx(t, time.Minute)
	before := s.Reading().Acquired
	var granted atomic.Uint64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 40 {
				n := int64(1 + (i+r)%3)
				actx, cancel := context.WithTimeout(ctx, time.Duration((i*7+r)%5)*time.Millisecond)
				u, err := s.Acquire(actx, n)
				cancel()
				if err != nil {
					o, _ := semaphore.OutcomeOf(err)
					assert.Contains(t, []semaphore.Outcome{semaphore.TimedOut, semaphore.Cancelled}, o, "%v", err)
					continue
				}
				granted.Add(1)
				log.add(u)
				runtime.Gosched()
				assert.NoError(t, u.Release(ctx))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, granted.Load(), s.Reading().Acquired-before, "grants counted")
	p := s.pool
	p.ledger.mu.Lock()
	e, u := p.ep.Load(), p.usageLocked()
	assert.Zero(t, e.inUse.Load(), "units in use")
	assert.Zero(t, e.holds.Load(), "holders")
	assert.Zero(t, u.held, "units held, as the callers' semaphore counts them")
	assert.Equal(t, u.usable, e.local.Available(), "every unit the callers may use is free")
	p.ledger.mu.Unlock()
}

// A TryAcquire that fails while it asks etcd for a whole block fails naming
// the units it was called for, not the block's: here its context ends just
// after the call starts.
func TestBlocks_TryAcquireErrorsNameTheCallersUnits(t *testing.T) {
	s := newSem(t, newClient(t, sharedEndpoint(t)), testName(t), WithCapacity(4), WithBlocks(2))
	ctx, cancel := context.WithCancel(testCtx(t, 20*time.Second))
	defer cancel()
	_, ok, err := s.TryAcquire(&cancelAfterCheck{Context: ctx, cancel: cancel}, 1)
	assert.False(t, ok)
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), `": try acquire 1 unit: canceled`)
	o, _ := semaphore.OutcomeOf(err)
	assert.Equal(t, semaphore.Cancelled, o)
}

// debugState describes the pool, for failing tests.
func (p *blockPool) debugState() string {
	waiters, awaited, largest := p.waiting.read()
	p.ledger.mu.Lock()
	defer p.ledger.mu.Unlock()
	u, ep := p.usageLocked(), p.ep.Load()
	out := fmt.Sprintf("  pool: %+v free %d, capacity %d reserve %d grants %v, %d retired; waiting %d units in %d (largest %d), requested %d, contended %v\n",
		u, u.free(), ep.local.Capacity(), ep.reserve, ep.grants(), len(p.ledger.retired), awaited, waiters, largest, p.ledger.requested, p.contended.Load())
	for _, b := range p.ledger.blocks {
		out += fmt.Sprintf("  block %d kept %d remote %d\n", b.token, b.kept, b.remote)
	}
	return out
}
