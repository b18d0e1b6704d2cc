package admission_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
)

// waitFor polls cond until it holds, failing the test after a generous deadline.
func waitFor(t *testing.T, c *admission.Controller, what string, cond func(admission.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond(c.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("never %s:\n%s", what, c.Diagnostics(0))
		}
		runtime.Gosched()
	}
}

// background reads the controller's state (Stats, Diagnostics, a permit's State)
// and changes it (a tracking permit consumes and returns memory) until stop is
// closed, so that any read of controller state outside its lock is a data race the
// race detector reports.
func background(c *admission.Controller, stop <-chan struct{}) *sync.WaitGroup {
	return backgroundN(c, stop, 1)
}

// backgroundN is background with n readers: more contention on the lock puts it
// in its starvation mode more often, where Unlock hands it straight to the
// longest waiter, so a gap between a check and its action is more likely to be
// entered by another goroutine.
func backgroundN(c *admission.Controller, stop <-chan struct{}, n int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = c.Stats()
				_ = c.Diagnostics(3)
				runtime.Gosched()
			}
		})
	}
	churn := c.Track("churn")
	wg.Go(func() {
		defer churn.Release()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if churn.Consume(limits(0, 1)) == nil {
				churn.Return(limits(0, 1))
			}
			done := churn.NeedCPU()
			wait := churn.Await()
			wait()
			done()
			runtime.Gosched()
		}
	})
	return &wg
}

// race ends a wait two ways at once, in an order that varies with round: the
// context is cancelled and the resources the waiter needs are freed, either both
// before the waiter can run (so the grant usually lands while it is waking for its
// context) or concurrently.
func race(round int, cancel, free func()) {
	switch round % 3 {
	case 0:
		cancel()
		free()
	case 1:
		free()
		cancel()
	default:
		gate := make(chan struct{})
		go func() { <-gate; cancel() }()
		close(gate)
		free()
	}
}

func TestGrantRacingCancellation_AdmissionGivesBackTheGrantAndReadsUnderTheLock(t *testing.T) {
	c := admission.New(limits(1, 1<<20), admission.WithName("race"), admission.WithCPUConcurrency(2))
	stop := make(chan struct{})
	bg := background(c, stop)
	granted, canceled := 0, 0
	for i := range 2000 {
		holder := mustAcquire(t, c, "holder", 10)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan result, 1)
		go func() {
			p, err := c.Acquire(ctx, "racer", 10)
			res <- result{p, err}
		}()
		waitFor(t, c, "queued", func(st admission.Stats) bool { return st.Waiters == 1 })
		race(i, cancel, holder.Release)
		r := <-res
		if r.err == nil {
			granted++
			require.Equal(t, admission.Active, r.p.State(), "round %d", i)
			r.p.Release()
		} else {
			canceled++
			require.ErrorIs(t, r.err, context.Canceled, "round %d", i)
			require.Nil(t, r.p)
		}
		cancel()
		waitFor(t, c, "back to one permit (the churn)", func(st admission.Stats) bool { return st.CurrentPermits == 1 && st.Held.Count == 0 })
	}
	close(stop)
	bg.Wait()
	st := c.Stats()
	assert.Equal(t, admission.Resources{}, st.Held, "a failed Acquire holds nothing")
	assert.Zero(t, st.CurrentPermits)
	assert.Zero(t, st.Waiters)
	t.Logf("granted %d, canceled %d", granted, canceled)
}

func TestGrantRacingCancellation_MemoryGivesBackTheGrantAndReadsUnderTheLock(t *testing.T) {
	c := admission.New(limits(10, 1000), admission.WithName("race"), admission.WithSerializeLimit(0.1), admission.WithCPUConcurrency(2))
	a := mustAcquire(t, c, "a", 0)
	stop := make(chan struct{})
	bg := background(c, stop)
	granted, canceled := 0, 0
	for i := range 2000 {
		b := mustAcquire(t, c, "b", 0)
		require.NoError(t, b.RequestMemory(context.Background(), 200), "crosses the serialize limit: b is blessed")
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { res <- a.RequestMemory(ctx, 10) }()
		waitFor(t, c, "queued for memory", func(st admission.Stats) bool { return st.MemoryWaiters == 1 })
		race(i, cancel, b.Release)
		if err := <-res; err == nil {
			granted++
			require.Equal(t, limits(1, 10), a.Consumed(), "round %d", i)
			a.Return(limits(0, 10))
		} else {
			canceled++
			require.ErrorIs(t, err, context.Canceled, "round %d", i)
		}
		cancel()
		require.Equal(t, limits(1, 0), a.Consumed(), "round %d: a cancelled request keeps nothing", i)
		require.Equal(t, admission.Active, a.State(), "round %d", i)
	}
	close(stop)
	bg.Wait()
	a.Release()
	st := c.Stats()
	assert.Equal(t, admission.Resources{}, st.Held)
	assert.Zero(t, st.CurrentPermits)
	assert.Zero(t, st.MemoryWaiters)
	t.Logf("granted %d, canceled %d", granted, canceled)
}

func TestGrantRacingCancellation_ReadmissionIsKeptWholeOrUndoneWhole(t *testing.T) {
	c := admission.New(limits(1, 1<<20), admission.WithName("race"), admission.WithCPUConcurrency(2))
	stop := make(chan struct{})
	bg := background(c, stop)
	kept, undone := 0, 0
	for i := range 1000 {
		p := mustAcquire(t, c, "paged", 10)
		park(t, c, p, &closer{})
		holder := mustAcquire(t, c, "holder", 10) // evicts p for the only count
		require.Equal(t, admission.Evicted, p.State(), "round %d", i)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { res <- p.Readmit(ctx) }()
		waitFor(t, c, "queued", func(st admission.Stats) bool { return st.Waiters == 1 })
		if i%4 == 3 { // the cancellation wins outright
			cancel()
			waitFor(t, c, "left the queue", func(st admission.Stats) bool { return st.Waiters == 0 })
			holder.Release()
		} else {
			race(i, cancel, holder.Release)
		}
		if err := <-res; err == nil {
			kept++
			require.Equal(t, limits(1, 10), p.Consumed(), "round %d: readmitted with its base", i)
			require.Equal(t, admission.Active, p.State(), "round %d", i)
		} else {
			undone++
			require.ErrorIs(t, err, context.Canceled, "round %d", i)
			require.Equal(t, admission.Resources{}, p.Consumed(), "round %d: still evicted, holding nothing", i)
			require.Equal(t, admission.Evicted, p.State(), "round %d", i)
		}
		cancel()
		p.Release()
	}
	close(stop)
	bg.Wait()
	st := c.Stats()
	assert.Equal(t, admission.Resources{}, st.Held)
	assert.Zero(t, st.CurrentPermits)
	t.Logf("kept %d, undone %d", kept, undone)
}

// A context cancelled before the Release that could admit the request: the
// request fails with its context's error wherever it is when the two happen
// (entering, queued, or waking with its grant), and holds nothing. The rounds run
// on real processors so that the two land at every point of its way in.
func TestAcquire_ACancellationBeforeTheGrantAlwaysWins(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	for i := range rounds {
		c := admission.New(admission.Resources{Count: 1, Memory: 100})
		holder, err := c.Acquire(context.Background(), "holder", 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		calling := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			close(calling)
			_, err := c.Acquire(ctx, "racer", 1)
			done <- err
		}()
		<-calling
		cancel()
		holder.Release()
		require.ErrorIs(t, <-done, context.Canceled, "round %d: admitted after its cancellation", i)
		st := c.Stats()
		require.Equal(t, admission.Resources{}, st.Held, "round %d: the grant was given back", i)
		require.Equal(t, uint64(1), st.Acquired, "round %d: the holder only", i)
		require.Equal(t, uint64(1), st.Cancelled, "round %d", i)
	}
}
