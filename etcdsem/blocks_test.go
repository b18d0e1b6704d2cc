package etcdsem

import (
	"errors"
	"github.com/fairsem/semaphore"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		if e.Client == s.cfg.clientTag {
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
	ub, err := b.Acquire(ctx, 3) // waits in etcd until a gives its 3 free units back
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
	waitFor(t, "the caller waits", func() bool { return s.blocks.ep.Load().local.Waiters() == 1 })

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
	waitFor(t, "units coming back go back until the blocks fit", func() bool {
		held, _ := blockUnits(t, s)
		return held == 2
	})
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
	waitFor(t, "the caller waits", func() bool { return s.blocks.ep.Load().local.Waiters() == 1 })
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
