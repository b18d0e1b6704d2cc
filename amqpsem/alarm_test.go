package amqpsem

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// During a memory alarm the broker stops reading every connection that
// publishes: each handle's probing connection, once it probes. Every call
// still ends at once, with ErrBlocked where it needs a probe and success where
// it does not: holders verify, return and release their slots on the holding
// connection, which never publishes, and keep them (no Lost); handles close
// at once. After the alarm, acquires succeed again.
func TestAlarm_EveryCallEndsAtOnceAndHoldersKeepTheirSlots(t *testing.T) {
	fulltest.Fault(t)
	b := ownBroker(t, "rabbitmq_event_exchange")
	name := testName(t)
	ctx := testCtx(t, 10*time.Minute)
	a := newSem(t, b.URL, name, WithSlots(4))
	c := newSem(t, b.URL, name)
	u1, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	u2, err := a.Acquire(ctx, 2)
	require.NoError(t, err)
	u3, err := c.Acquire(ctx, 1)
	require.NoError(t, err)
	waiter := make(chan error, 1)
	go func() {
		_, err := c.Acquire(ctx, 1)
		waiter <- err
	}()
	waitWaiting(t, c, 1)

	ctl(t, b, "set_vm_memory_high_watermark", "0.000001")
	alarmOn := true
	t.Cleanup(func() {
		if alarmOn {
			ctl(t, b, "set_vm_memory_high_watermark", "0.4")
		}
	})
	// The alarm is on: each probing connection is blocked once it publishes.
	require.Eventually(t, func() bool {
		_, _, err := a.TryAcquire(ctx, 1)
		return errors.Is(err, ErrBlocked)
	}, time.Minute, 10*time.Millisecond)
	select {
	case err := <-waiter:
		assert.ErrorIs(t, err, ErrBlocked, "the waiter fails with the alarm's error")
	case <-time.After(time.Minute):
		t.Fatal("a waiting acquire did not end in the alarm")
	}

	// promptly runs a call with a minute to spare and asserts it ends within
	// 2s, with nil or an error wrapping ErrBlocked as want says.
	promptly := func(what string, blocked bool, call func(ctx context.Context) error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		start := time.Now()
		err := call(cctx)
		took := time.Since(start)
		t.Logf("%s: %v after %v", what, err, took.Round(time.Millisecond))
		assert.Less(t, took, 2*time.Second, "%s ends at once", what)
		if blocked {
			assert.ErrorIs(t, err, ErrBlocked, what)
			assert.ErrorContains(t, err, "resource alarm", what)
		} else {
			assert.NoError(t, err, what)
		}
	}
	promptly("TryAcquire", true, func(ctx context.Context) error { _, _, err := c.TryAcquire(ctx, 1); return err })
	promptly("Acquire", true, func(ctx context.Context) error { _, err := a.Acquire(ctx, 1); return err })
	promptly("Slots", true, func(ctx context.Context) error { _, err := a.Slots(ctx); return err })
	promptly("Stats", true, func(ctx context.Context) error { _, err := c.Stats(ctx); return err })
	promptly("WaitReleased", true, func(ctx context.Context) error { return a.WaitReleased(ctx, []int{5}) })
	promptly("AddSlots", true, func(ctx context.Context) error { _, err := a.AddSlots(ctx, 1); return err })
	promptly("RemoveSlots", true, func(ctx context.Context) error { _, err := a.RemoveSlots(ctx, 1); return err })
	promptly("Verify", false, func(ctx context.Context) error { return u1.Verify(ctx) })
	promptly("Verify of 2 slots", false, func(ctx context.Context) error { return u2.Verify(ctx) })
	promptly("Return", false, func(ctx context.Context) error { return u2.Return(ctx, 1) })
	promptly("Release", false, func(ctx context.Context) error { return u1.Release(ctx) })
	promptly("Release of another handle", false, func(ctx context.Context) error { return u3.Release(ctx) })
	promptly("New", false, func(ctx context.Context) error {
		s, err := New(ctx, b.URL, name)
		if err == nil {
			err = s.Close()
		}
		return err
	})
	for _, u := range []*Units{u1, u2, u3} {
		select {
		case <-u.Lost():
			t.Fatal("a resource alarm cost a holder its slot")
		default:
		}
	}
	assert.Equal(t, int64(1), u2.Count())
	promptly("Release of the rest", false, func(ctx context.Context) error { return u2.Release(ctx) })
	promptly("Drain", false, func(ctx context.Context) error { return a.Drain(ctx) })
	promptly("Close of a blocked handle", false, func(context.Context) error { return c.Close() })

	ctl(t, b, "set_vm_memory_high_watermark", "0.4")
	alarmOn = false
	var u *Units
	require.Eventually(t, func() bool {
		u, err = a.Acquire(ctx, 4)
		if err != nil {
			require.ErrorIs(t, err, ErrBlocked, "until the broker lifts the block")
		}
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the alarm is over: the handle probes again")
	require.NoError(t, u.Release(ctx))
}
