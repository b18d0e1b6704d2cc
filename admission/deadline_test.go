package admission_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

// measured returns a controller of one count whose permits usually hold it
// rtt: one permit held that long and released. It runs in a synctest bubble.
func measured(t *testing.T, rtt time.Duration, opts ...admission.Option) *admission.Controller {
	t.Helper()
	c := admission.New(admission.Resources{Count: 1, Memory: 1 << 20}, append([]admission.Option{admission.WithName("db")}, opts...)...)
	p, err := c.Acquire(context.Background(), "warm", 0)
	require.NoError(t, err)
	time.Sleep(rtt)
	p.Release()
	return c
}

func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pending is an Acquire in the background.
type pending struct {
	done chan struct{}
	p    *admission.Permit
	err  error
}

func acquire(ctx context.Context, c *admission.Controller, opts ...admission.PermitOption) *pending {
	a := &pending{done: make(chan struct{})}
	go func() {
		a.p, a.err = c.Acquire(ctx, "op", 0, opts...)
		close(a.done)
	}()
	synctest.Wait()
	return a
}

func (a *pending) ended() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

func TestAcquire_RefusesAtOnceARequestWhoseDeadlineCannotCoverTheExpectedWaitAndTheRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := measured(t, 100*time.Millisecond)
		held, err := c.Acquire(context.Background(), "op", 0)
		require.NoError(t, err)
		ahead := acquire(context.Background(), c)
		// Two counts must come back at one per 100ms: 200ms, and 100ms to run.
		start := time.Now()
		_, err = c.Acquire(within(t, 250*time.Millisecond), "op", 0)
		assert.Zero(t, time.Since(start), "refused at once")
		assert.ErrorIs(t, err, semaphore.ErrShed)
		o, _ := semaphore.OutcomeOf(err)
		assert.Equal(t, semaphore.Shed, o)
		assert.Contains(t, err.Error(), `admission "db": admit "op" (memory 0B): shed at once: expected wait 200ms`)
		st := c.Stats()
		assert.Equal(t, uint64(1), st.Shed)
		assert.Equal(t, uint64(1), st.QueuedForAdmission, "the refused request never queued")
		fits := acquire(within(t, 310*time.Millisecond), c)
		assert.False(t, fits.ended())
		held.Release()
		<-ahead.done
		ahead.p.Release()
		<-fits.done
		require.NoError(t, fits.err)
		fits.p.Release()
	})
}

func TestAcquire_ShedsAtTheHeadARequestLeftWithLessThanTheRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := measured(t, 100*time.Millisecond)
		held, err := c.Acquire(context.Background(), "op", 0)
		require.NoError(t, err)
		late := acquire(within(t, 250*time.Millisecond), c) // 100ms expected: queued
		next := acquire(context.Background(), c)
		time.Sleep(180 * time.Millisecond)
		held.Release() // held 180ms: the usual round trip becomes 110ms, and 70ms are left
		<-late.done
		assert.ErrorIs(t, late.err, semaphore.ErrShed)
		assert.Contains(t, late.err.Error(), "shed at the head of the queue: 70ms left before its deadline, less than the usual round trip 110ms")
		<-next.done
		require.NoError(t, next.err, "the count went to the next request")
		next.p.Release()
	})
}

func TestWithoutDeadlineShedding_AdmitsARequestHoweverLittleOfItsDeadlineIsLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := measured(t, 100*time.Millisecond, admission.WithoutDeadlineShedding())
		held, err := c.Acquire(context.Background(), "op", 0)
		require.NoError(t, err)
		late := acquire(within(t, 150*time.Millisecond), c)
		assert.False(t, late.ended(), "queued, though 100ms + 100ms do not fit 150ms")
		time.Sleep(120 * time.Millisecond)
		held.Release()
		<-late.done
		require.NoError(t, late.err, "admitted with 30ms left")
		late.p.Release()
		assert.Zero(t, c.Stats().Shed)
	})
}

func TestNotShed_ExemptsARequestFromTheDeadlineRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := measured(t, 100*time.Millisecond)
		held, err := c.Acquire(context.Background(), "op", 0)
		require.NoError(t, err)
		exempt := acquire(within(t, 150*time.Millisecond), c, admission.NotShed())
		assert.False(t, exempt.ended())
		time.Sleep(120 * time.Millisecond)
		held.Release()
		<-exempt.done
		require.NoError(t, exempt.err)
		exempt.p.Release()
	})
}
