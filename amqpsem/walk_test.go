package amqpsem

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every walk starts at slot 1, as the protocol's acquire does: the lowest free
// slot is taken, whatever was taken or given back before.
func TestWalk_StartsAtSlot1EveryTime(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(3))
	ctx := testCtx(t, time.Minute)
	for range 3 {
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		assert.Equal(t, []int{1}, u.Slots())
		require.NoError(t, u.Release(ctx))
	}
	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, u.Return(ctx, 1), "gives back slot 2")
	v, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{2}, v.Slots(), "slot 1 is held: the next free is 2")
	require.NoError(t, u.Release(ctx))
	w, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{1}, w.Slots(), "slot 1 is free again: taken first")
	require.NoError(t, v.Release(ctx))
	require.NoError(t, w.Release(ctx))
}

// The walk verifies the slots it declared, as the protocol recommends: a slot
// removed between the probes and the declare (its A queue deleted) is given
// back, not granted.
func TestWalk_VerifiesAfterTheDeclareAndGivesBackARemovedSlot(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(2))
	op := newSem(t, b.URL, name)
	ctx := testCtx(t, time.Minute)
	raw, err := amqp.Dial(b.URL)
	require.NoError(t, err)
	defer raw.Close()
	ch, err := raw.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclare(holdQueue(name, 1), false, false, true, false, nil)
	require.NoError(t, err, "another client holds slot 1")
	s.beforeDeclare = func(slot int) {
		removed, err := op.RemoveSlots(ctx, 1)
		assert.NoError(t, err)
		assert.Equal(t, []int{2}, removed, "the slot being declared")
	}
	_, ok, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok, "slot 2 was removed before it was verified: not granted")
	s.beforeDeclare = nil
	st, err := op.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Slots)
	assert.Equal(t, []int{1}, st.Holders, "the B queue of the removed slot was given back")

	// Weighted: slot 2, the last taken, is removed before the verification;
	// the walk gives it back, then finds too few slots and gives back slot 1.
	require.NoError(t, raw.Close())
	_, err = op.AddSlots(ctx, 1)
	require.NoError(t, err)
	s.beforeDeclare = func(slot int) {
		if slot == 2 {
			_, err := op.RemoveSlots(ctx, 1)
			assert.NoError(t, err)
		}
	}
	_, _, err = s.TryAcquire(ctx, 2)
	s.beforeDeclare = nil
	assert.ErrorIs(t, err, semaphore.ErrTooLarge, "one slot is left")
	st, err = op.Stats(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Holders, "both B queues were given back")
}

// A caller that leaves in the middle of a walk (its context ends between the
// probes and the declare) leaves nothing held: the walk gives back what it
// declared before it returns.
func TestWalk_ACallerLeavingMidWalkLeavesNothingHeld(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(2))
	ctx := testCtx(t, time.Minute)
	for _, n := range []int64{1, 2} {
		wctx, cancel := context.WithCancel(ctx)
		s.beforeDeclare = func(int) { cancel() }
		_, err := s.Acquire(wctx, n)
		s.beforeDeclare = nil
		assert.ErrorIs(t, err, context.Canceled)
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		assert.Empty(t, st.Holders, "%d slots: what the walk declared was given back", n)
		assert.Empty(t, st.Mine)
	}
	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, u.Release(ctx))
}

// A release of this handle wakes its waiter at once, without events and
// without a poll: the waiter here would poll only after an hour.
func TestAcquire_ALocalReleaseWakesTheHandlesWaiter(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(1), WithWakeup(WakePolling),
		func(c *config) { c.pollMin, c.pollMax = time.Hour, time.Hour })
	ctx := testCtx(t, time.Minute)
	h, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	walks := st.Walks
	got := make(chan *Units, 1)
	go func() {
		u, err := s.Acquire(ctx, 1)
		assert.NoError(t, err)
		got <- u
	}()
	require.Eventually(t, func() bool {
		st, err := s.Stats(ctx)
		return err == nil && st.Walks > walks && st.Waiting == 1
	}, 30*time.Second, 5*time.Millisecond, "the waiter walked once and waits")
	require.NoError(t, h.Release(ctx))
	select {
	case u := <-got:
		require.NoError(t, u.Release(ctx))
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was not woken by the release of its own handle")
	}
}

// Administration removes slots from the top down, each deletion confirmed
// before the next, as the protocol asks: the broker's events show the A
// queues deleted in descending order.
func TestAdmin_RemovesSlotsFromTheTopDown(t *testing.T) {
	b := broker(t)
	name := testName(t)
	op := newSem(t, b.URL, name, WithSlots(5), WithOvershoot(0))
	rec := record(t, b.URL, name)
	ctx := testCtx(t, time.Minute)
	removed, err := op.RemoveSlots(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, []int{5, 4, 3}, removed)
	removed, err = op.Destroy(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 1}, removed)
	var deleted []int
	for _, e := range rec.flush(t) {
		if e.kind == 'A' && !e.created {
			deleted = append(deleted, e.slot)
		}
	}
	assert.Equal(t, []int{5, 4, 3, 2, 1}, deleted, "the broker deleted the A queues in this order")
}

// A handle does not declare a B queue it is giving back until the broker has
// confirmed the deletion: its connection owns the queue, and a declare that
// overtook the deletion would be answered declare-ok and then deleted under
// its new holder. Here a try runs when the deletion is done at the broker
// but not yet seen by the handle.
func TestWalk_ASlotBeingGivenBackIsNotRetakenByItsHandle(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(1))
	ctx := testCtx(t, time.Minute)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	tried := make(chan bool, 1)
	var fired atomic.Bool
	s.afterDelete = func([]int) {
		if fired.Swap(true) {
			return // the release below, if the try took the slot
		}
		v, ok, err := s.TryAcquire(ctx, 1)
		assert.NoError(t, err)
		tried <- ok
		if ok {
			assert.NoError(t, v.Release(ctx))
		}
	}
	require.NoError(t, u.Release(ctx))
	s.afterDelete = nil
	assert.False(t, <-tried, "the slot was declared again while its deletion was unconfirmed")
	v, err := s.Acquire(ctx, 1)
	require.NoError(t, err, "free once the deletion is confirmed")
	require.NoError(t, v.Release(ctx))
}
