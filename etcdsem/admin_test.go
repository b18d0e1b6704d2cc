package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/statsline/statslinetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBreak_FailsEveryWaiterAcrossClientsAndRepairRestores(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(1))
	others := []*Semaphore{newSem(t, newClient(t, ep), name), newSem(t, newClient(t, ep), name)}
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := others[i%2].Acquire(ctx, 1)
			errs <- err
		}()
	}
	waitWaiters(t, a, 4)
	require.NoError(t, a.Break(ctx, errors.New("maintenance")))
	for range 4 {
		err := <-errs
		assert.ErrorIs(t, err, semaphore.ErrBroken)
		assert.ErrorContains(t, err, "maintenance")
	}
	_, err = others[0].Acquire(ctx, 1)
	assert.ErrorIs(t, err, semaphore.ErrBroken, "later acquires fail")
	_, _, err = others[1].TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, semaphore.ErrBroken)
	assert.Equal(t, int64(1), h.Count(), "holders keep their units")
	require.NoError(t, h.Release(ctx))
	require.NoError(t, a.Repair(ctx))
	u, err := others[0].Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	require.NoError(t, u.Release(ctx))
	assert.Panics(t, func() { _ = a.Break(ctx, nil) })
	checkHistory(t, a.sess.cli, name, log)
}

// Break then Drain is the shutdown: Drain returns once every holder of every
// handle has released, and a Drain whose context ends says what is still held.
func TestDrain_AfterBreakReturnsWhenEveryHolderHasReleased(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(3))
	b := newSem(t, newClient(t, ep), name)
	op := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	require.NoError(t, op.Drain(ctx), "nothing held: at once")
	ha, err := a.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(ha)
	hb, err := b.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(hb)
	require.NoError(t, op.Break(ctx, errors.New("shutting down")))

	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = op.Drain(dctx)
	cancel()
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, fmt.Sprintf("etcdsem %q: drain: 3 units still held: timed out after", name))

	drained := make(chan error, 1)
	go func() { drained <- op.Drain(ctx) }()
	require.NoError(t, ha.Release(ctx))
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v with a holder left", err)
	default:
	}
	require.NoError(t, hb.Release(ctx))
	require.NoError(t, <-drained)
	require.NoError(t, op.Close())
	assert.ErrorIs(t, op.Drain(ctx), ErrClosed)
	checkHistory(t, a.sess.cli, name, log)
}

func TestResize_GrowGrantsWaitersShrinkKeepsHoldersAndFailsTooLarge(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(2))
	b := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	h, err := a.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(h)
	grown := make(chan *Units, 1)
	go func() {
		u, err := b.Acquire(ctx, 2)
		assert.NoError(t, err)
		grown <- u
	}()
	waitWaiters(t, a, 1)
	require.NoError(t, a.Resize(ctx, 4))
	u := <-grown
	log.add(u)

	// Shrink below what is held: holders keep their units, a waiter larger than
	// the new capacity fails, a fitting waiter waits until the held units fit.
	bigErr := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx, 3)
		bigErr <- err
	}()
	waitWaiters(t, a, 1)
	require.NoError(t, a.Resize(ctx, 1))
	assert.ErrorIs(t, <-bigErr, semaphore.ErrTooLarge)
	small := make(chan *Units, 1)
	go func() {
		u, err := b.Acquire(ctx, 1)
		assert.NoError(t, err)
		small <- u
	}()
	waitWaiters(t, a, 1)
	st, err := a.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(4), st.Held, "shrinking never revokes holders")
	assert.Equal(t, int64(1), st.Capacity)
	require.NoError(t, h.Release(ctx))
	select {
	case <-small:
		t.Fatal("granted while the held units exceed the capacity")
	default:
	}
	require.NoError(t, u.Release(ctx))
	us := <-small
	log.add(us)
	require.NoError(t, us.Release(ctx))
	checkHistory(t, a.sess.cli, name, log)
}

func TestUnits_ReturnLowersTheWeightAndLetsWaitersIn(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(3))
	b := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	h, err := a.Acquire(ctx, 3)
	require.NoError(t, err)
	log.add(h)
	got := make(chan *Units, 1)
	go func() {
		u, err := b.Acquire(ctx, 2)
		assert.NoError(t, err)
		got <- u
	}()
	waitWaiters(t, a, 1)
	assert.ErrorIs(t, h.Return(ctx, 4), semaphore.ErrInsufficientUnits)
	require.NoError(t, h.Return(ctx, 2))
	assert.Equal(t, int64(1), h.Count())
	u := <-got
	log.add(u)
	require.NoError(t, h.Return(ctx, 1))
	assert.Zero(t, h.Count(), "returning all is Release")
	require.NoError(t, u.Release(ctx))
	checkHistory(t, a.sess.cli, name, log)
}

// A handle started after a shrink learns from the history that a key above the
// new capacity is a holder, not a waiter, and waits behind it.
func TestNew_ReplaysHistoryToTellHoldersKeptByAShrink(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(3))
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	h, err := a.Acquire(ctx, 3)
	require.NoError(t, err)
	log.add(h)
	require.NoError(t, a.Resize(ctx, 1))
	late := newSem(t, newClient(t, ep), name)
	st, err := late.Stats(ctx)
	require.NoError(t, err)
	require.Len(t, st.Holders, 1, "the holder above the capacity is a holder")
	assert.Equal(t, h.Token(), st.Holders[0].Token)
	assert.Empty(t, st.Waiters)
	assert.Equal(t, int64(3), st.Held)
	_, ok, err := late.TryAcquire(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok, "the held units exceed the capacity")
	require.NoError(t, h.Release(ctx))
	u, ok, err := late.TryAcquire(ctx, 1)
	require.NoError(t, err)
	assert.True(t, ok)
	log.add(u)
	require.NoError(t, u.Release(ctx))
	checkHistory(t, a.sess.cli, name, log)
}

// Stats print with %v as one line that counts the entries, with the reason of
// a Break quoted.
func TestStats_PrintAsOneLine(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	a := newSem(t, newClient(t, ep), name, WithCapacity(3))
	b := newSem(t, newClient(t, ep), name)
	ctx := testCtx(t, 30*time.Second)
	h, err := a.Acquire(ctx, 2)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx, 2)
		waited <- err
	}()
	waitWaiters(t, a, 1)
	st, err := a.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("etcdsem %q revision=%d capacity=3 held=2 broken=false holders=1 waiters=1 reports=0", name, st.Revision), fmt.Sprint(st))
	require.NoError(t, a.Break(ctx, errors.New("down\n<b>for</b> \"maintenance\"")))
	assert.ErrorIs(t, <-waited, semaphore.ErrBroken)
	require.NoError(t, h.Release(ctx))
	st, err = a.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(`etcdsem %q revision=%d capacity=3 held=0 broken=true reason="down\n<b>for</b> \"maintenance\"" holders=0 waiters=0 reports=0`, name, st.Revision), st.String())
}

func TestStats_StringNamesEveryField(t *testing.T) {
	st := Stats{Name: "n", Revision: 1, Capacity: 1, Held: 1, Broken: true, Reason: "r", Holders: make([]Entry, 1), Waiters: make([]Entry, 1), Reports: make([]Report, 1)}
	statslinetest.EveryField(t, st, st.String(), nil)
	assert.Equal(t, `etcdsem "n" revision=1 capacity=1 held=1 broken=true reason="r" holders=1 waiters=1 reports=1`, st.String())
	st = Stats{Name: strings.Repeat("x", 5000) + "\n"}
	assert.Equal(t, "etcdsem "+strconv.Quote(st.Name)+" revision=0 capacity=0 held=0 broken=false holders=0 waiters=0 reports=0", st.String())
}
