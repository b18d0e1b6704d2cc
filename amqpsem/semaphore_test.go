package amqpsem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAcquire_UncontendedGrantsAtOnceAndReleaseFrees(t *testing.T) {
	b := broker(t)
	name := testName(t)
	rec := record(t, b.URL, name)
	log := &grantLog{}
	s := newSem(t, b.URL, name, WithSlots(3))
	ctx := testCtx(t, time.Minute)

	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(u)
	assert.Equal(t, int64(2), u.Count())
	assert.Equal(t, []int{1, 2}, u.Slots(), "the walk takes the lowest free slots")
	require.NoError(t, u.Verify(ctx))
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, st.Slots)
	assert.Equal(t, []int{1, 2}, st.Holders)
	assert.Equal(t, 2, st.Held)
	assert.Equal(t, []int{1, 2}, st.Mine)

	log.release(t, ctx, u)
	require.NoError(t, u.Release(ctx), "Release is idempotent")
	assert.Zero(t, u.Count())
	assert.Empty(t, u.Slots())
	var nilUnits *Units
	assert.NoError(t, nilUnits.Release(ctx), "Release is nil-safe")
	st, err = s.Stats(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Holders)
	assert.Equal(t, int64(1), st.Acquired)
	assert.Equal(t, 2, check(t, rec, log, 3), "the B queues of slots 1 and 2")
}

// The queues are the protocol's, named as it names them, so that any client
// of the protocol shares the semaphore: a raw client holding slot 1's B queue
// is skipped, and one walking the slots finds ours held.
func TestProtocol_ARawClientSharesTheSemaphore(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(2))
	ctx := testCtx(t, time.Minute)
	raw, err := amqp.Dial(b.URL)
	require.NoError(t, err)
	defer raw.Close()
	ch, err := raw.Channel()
	require.NoError(t, err)
	for _, q := range []string{name + "-1-A", name + "-2-A"} {
		_, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		require.NoError(t, err, "the slot queue %s exists, durable", q)
	}
	_, err = ch.QueueDeclare(name+"-1-B", false, false, true, false, nil)
	require.NoError(t, err, "the raw client takes slot 1")

	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{2}, u.Slots(), "slot 1 is the raw client's")
	_, ok, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok, "both slots are held")
	// The raw client sees slot 2 held: its declare is refused.
	_, err = ch.QueueDeclare(name+"-2-B", false, false, true, false, nil)
	assert.True(t, isCode(err, amqp.ResourceLocked), "RESOURCE_LOCKED: %v", err)
	// The raw client leaves (its connection closes): slot 1 is free.
	require.NoError(t, raw.Close())
	v, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{1}, v.Slots())
	require.NoError(t, u.Release(ctx))
	require.NoError(t, v.Release(ctx))
}

// Contention and stress: 20 goroutines over 4 handles, weights 1 to 3, 3
// slots, some giving up by timeout or cancellation at any point of their
// wait; the checker finds no slot held twice and the bound kept.
func TestAcquire_ContentionKeepsTheBound(t *testing.T) {
	b := broker(t)
	name := testName(t)
	rec := record(t, b.URL, name)
	log := &grantLog{}
	const handles, perHandle, rounds, slots = 4, 5, 6, 3
	sems := make([]*Semaphore, handles)
	for i := range sems {
		sems[i] = newSem(t, b.URL, name, WithSlots(slots))
	}
	ctx := testCtx(t, 3*time.Minute)
	var inUse, gaveUp, granted atomic.Int64
	var wg sync.WaitGroup
	for i := range handles * perHandle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := sems[i%handles]
			for r := range rounds {
				n := int64(1 + (i+r)%3)
				var u *Units
				var err error
				switch (i + r) % 4 {
				case 1:
					u, err = s.AcquireTimeout(ctx, time.Duration(1+r*7)*time.Millisecond, n)
				case 2:
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
				granted.Add(1)
				assert.LessOrEqual(t, inUse.Add(n), int64(slots), "slots in use")
				inUse.Add(-n)
				log.release(t, ctx, u)
			}
		}()
	}
	wg.Wait()
	st, err := sems[0].Stats(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Holders, "every acquire that gave up left nothing held")
	grants := check(t, rec, log, slots)
	t.Logf("%d grants to callers, %d gave up, %d B queues created", granted.Load(), gaveUp.Load(), grants)
}

// Within a handle callers are served in FIFO order: a large waiter at the
// head holds back a small one behind it, and TryAcquire does not jump them.
func TestAcquire_FIFOWithinAHandleLargeWaiterHoldsBackSmallOnes(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(3))
	ctx := testCtx(t, time.Minute)
	h, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	big := make(chan *Units, 1)
	go func() {
		u, err := s.Acquire(ctx, 3)
		assert.NoError(t, err)
		big <- u
	}()
	waitWaiting(t, s, 1)
	small := make(chan *Units, 1)
	go func() {
		u, err := s.Acquire(ctx, 1)
		assert.NoError(t, err)
		small <- u
	}()
	waitWaiting(t, s, 2)
	_, ok, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok, "TryAcquire never jumps the handle's waiters")
	select {
	case <-small:
		t.Fatal("a small waiter jumped a large one")
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, h.Release(ctx))
	ub := <-big
	select {
	case <-small:
		t.Fatal("granted while the large waiter holds every slot")
	default:
	}
	require.NoError(t, ub.Release(ctx))
	us := <-small
	require.NoError(t, us.Release(ctx))
}

func TestTryAcquire_TakesFreeSlotsAndNeverWaits(t *testing.T) {
	b := broker(t)
	s := newSem(t, b.URL, testName(t), WithSlots(2))
	ctx := testCtx(t, time.Minute)
	u, ok, err := s.TryAcquire(ctx, 2)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	assert.False(t, ok, "no free slot")
	_, _, err = s.TryAcquire(ctx, 3)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	require.NoError(t, u.Release(ctx))
	u, ok, err = s.TryAcquire(ctx, 0)
	require.NoError(t, err)
	assert.True(t, ok, "zero slots are always free")
	assert.Empty(t, u.Slots())
	require.NoError(t, u.Release(ctx))
	// A weighted try that finds fewer free slots than it asks for takes none.
	h, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	_, ok, err = s.TryAcquire(ctx, 2)
	require.NoError(t, err)
	assert.False(t, ok)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{1}, st.Holders, "the failed try gave back what it took")
	require.NoError(t, h.Release(ctx))
}

func TestAcquire_FailsAtOnce(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(2))
	ctx := testCtx(t, time.Minute)
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Acquire(done, 1)
	assert.ErrorIs(t, err, context.Canceled, "context already done")
	_, err = s.Acquire(ctx, 3)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.ErrorContains(t, err, "3 units")
	u0, err := s.AcquireTimeout(ctx, 0, 1)
	require.NoError(t, err, "AcquireTimeout(0) succeeds when TryAcquire would")
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	_, err = s.AcquireTimeout(ctx, 0, 1)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	_, err = s.AcquireTimeout(ctx, -time.Second, 1)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut, "a negative timeout does not wait")
	_, err = s.AcquireTimeout(ctx, 200*time.Millisecond, 2)
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, u.Release(ctx))
	require.NoError(t, u0.Release(ctx))
	assert.Panics(t, func() { _, _ = s.Acquire(ctx, -1) })
	assert.Panics(t, func() { _, _ = s.Acquire(ctx, MaxSlots+1) })
	assert.Panics(t, func() { _, _, _ = s.TryAcquire(ctx, -1) })
	require.NoError(t, s.Close())
	_, err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, ErrClosed)
	_, _, err = s.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, ErrClosed)
}

func TestAcquire_CancelWhileWaitingLeavesNothingHeld(t *testing.T) {
	b := broker(t)
	name := testName(t)
	a := newSem(t, b.URL, name, WithSlots(1))
	c := newSem(t, b.URL, name)
	ctx := testCtx(t, time.Minute)
	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Acquire(wctx, 1)
		errc <- err
	}()
	waitWaiting(t, c, 1)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	require.NoError(t, h.Release(ctx))
	st, err := a.Stats(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Holders)
	u, err := c.Acquire(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, u.Release(ctx))
}

// A cancellation racing a grant: whatever the caller sees, no slot is left
// held by nobody: a later acquire is granted.
func TestAcquire_CancelRacingGrantLeavesNoSlotHeldByNobody(t *testing.T) {
	b := broker(t)
	name := testName(t)
	rec := record(t, b.URL, name)
	log := &grantLog{}
	a := newSem(t, b.URL, name, WithSlots(1))
	c := newSem(t, b.URL, name)
	ctx := testCtx(t, 2*time.Minute)
	for i := range 10 {
		h, err := a.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(h)
		wctx, cancel := context.WithCancel(ctx)
		res := make(chan *Units, 1)
		go func() {
			u, err := c.Acquire(wctx, 1)
			if err != nil {
				assert.ErrorIs(t, err, context.Canceled)
			} else {
				log.add(u)
			}
			res <- u
		}()
		waitWaiting(t, c, 1)
		log.end(h)
		if i%2 == 0 {
			go cancel()
			require.NoError(t, h.Release(ctx))
		} else {
			go func() { assert.NoError(t, h.Release(ctx)) }()
			cancel()
		}
		if u := <-res; u != nil {
			log.release(t, ctx, u)
		}
		u, err := a.AcquireTimeout(ctx, 20*time.Second, 1)
		require.NoError(t, err, "round %d: the slot was left held", i)
		log.add(u)
		log.release(t, ctx, u)
	}
	check(t, rec, log, 1)
}

// A handle's Close closes its holding connection: the broker drops its B
// queues at once and a waiter elsewhere is granted promptly.
func TestHolderCrash_ClosedConnectionGrantsTheNextPromptly(t *testing.T) {
	b := broker(t)
	name := testName(t)
	a := newSem(t, b.URL, name, WithSlots(1))
	c := newSem(t, b.URL, name)
	ctx := testCtx(t, time.Minute)
	_, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	got := make(chan *Units, 1)
	go func() {
		u, err := c.Acquire(ctx, 1)
		assert.NoError(t, err)
		got <- u
	}()
	waitWaiting(t, c, 1)
	start := time.Now()
	require.NoError(t, a.Close())
	u := <-got
	t.Logf("connection closed to the next grant: %v", time.Since(start).Round(time.Millisecond))
	require.NoError(t, u.Release(ctx))
}

func TestWithSemaphore_ReleasesAfterFn(t *testing.T) {
	b := broker(t)
	s := newSem(t, b.URL, testName(t), WithSlots(1))
	ctx := testCtx(t, time.Minute)
	boom := errors.New("boom")
	err := WithSemaphore(ctx, s, 1, func(ctx context.Context) error {
		st, err := s.Stats(ctx)
		assert.NoError(t, err)
		assert.Equal(t, []int{1}, st.Mine)
		return boom
	})
	assert.ErrorIs(t, err, boom)
	u, ok, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok, "the slot was released")
	require.NoError(t, u.Release(ctx))
}

// Close gives back every slot of the handle: releasing afterwards, or while
// Close runs, is no loss.
func TestClose_ReleaseAfterCloseReturnsNil(t *testing.T) {
	b := broker(t)
	name := testName(t)
	ctx := testCtx(t, time.Minute)
	for i := range 6 {
		s, err := New(ctx, b.URL, name, WithSlots(2))
		require.NoError(t, err)
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		v, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		if i%2 == 1 {
			released := make(chan error, 1)
			go func() { released <- u.Release(ctx) }()
			require.NoError(t, s.Close())
			assert.NoError(t, <-released, "round %d: Release during Close", i)
		} else {
			require.NoError(t, s.Close())
		}
		assert.NoError(t, u.Release(ctx), "round %d", i)
		assert.NoError(t, v.Return(ctx, 1), "round %d", i)
		assert.NoError(t, u.Err())
		select {
		case <-u.Lost():
			t.Fatalf("round %d: Lost closed by Close", i)
		default:
		}
	}
	s := newSem(t, b.URL, name)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Holders)
}

// After Close every call fails with ErrClosed, except those that give slots
// back (nil: Close gave them back), Name and Close itself.
func TestClose_IsTerminalAtEveryEntryPoint(t *testing.T) {
	b := broker(t)
	name := testName(t)
	ctx := testCtx(t, time.Minute)
	s, err := New(ctx, b.URL, name, WithSlots(1))
	require.NoError(t, err)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	waiter := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, 1)
		waiter <- err
	}()
	waitWaiting(t, s, 1)
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-waiter, ErrClosed, "a waiter fails with ErrClosed")
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.Equal(t, name, s.Name())
	assert.NoError(t, u.Release(ctx))
	calls := map[string]func() error{
		"Acquire":        func() error { _, err := s.Acquire(ctx, 1); return err },
		"AcquireTimeout": func() error { _, err := s.AcquireTimeout(ctx, time.Second, 1); return err },
		"TryAcquire":     func() error { _, _, err := s.TryAcquire(ctx, 1); return err },
		"Stats":          func() error { _, err := s.Stats(ctx); return err },
		"Slots":          func() error { _, err := s.Slots(ctx); return err },
		"AddSlots":       func() error { _, err := s.AddSlots(ctx, 1); return err },
		"RemoveSlots":    func() error { _, err := s.RemoveSlots(ctx, 1); return err },
		"Resize":         func() error { _, err := s.Resize(ctx, 3); return err },
		"Destroy":        func() error { _, err := s.Destroy(ctx); return err },
		"WaitReleased":   func() error { return s.WaitReleased(ctx, []int{1}) },
		"Drain":          func() error { return s.Drain(ctx) },
		"WithSemaphore":  func() error { return WithSemaphore(ctx, s, 1, func(context.Context) error { return nil }) },
	}
	for op, call := range calls {
		err := call()
		assert.ErrorIs(t, err, ErrClosed, op)
		assert.ErrorContains(t, err, fmt.Sprintf("amqpsem %q", name), op)
	}
	s2 := newSem(t, b.URL, name)
	n, err := s2.Slots(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the semaphore itself is untouched")
}

// waitWaiting waits until n callers of s wait in Acquire.
func waitWaiting(t testing.TB, s *Semaphore, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.waiting == n
	}, 30*time.Second, 5*time.Millisecond, "waiting for %d waiters", n)
	time.Sleep(0) // the waiters are in Acquire; the last one may still be walking
}

// A holder whose connection closes (the broker closed it, or the network
// reset it) is told at once, not a heartbeat timeout later: the broker drops
// its B queues as the connection closes.
func TestLost_ClosesAsTheHoldingConnectionCloses(t *testing.T) {
	b := broker(t)
	name := testName(t)
	px := newProxy(t, b.URL)
	s := newSem(t, px.url(), name, WithSlots(1), WithHeartbeat(10*time.Second))
	ctx := testCtx(t, time.Minute)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	px.dropConns()
	dropped := time.Now()
	select {
	case <-u.Lost():
		t.Logf("Lost closed %v after the connection was reset", time.Since(dropped).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not close with the connection: it waited for the heartbeat timeout")
	}
	assert.ErrorIs(t, u.Err(), ErrLost)
	assert.ErrorContains(t, u.Err(), "connection closed")
	v, err := s.Acquire(ctx, 1)
	require.NoError(t, err, "the handle dials again through the proxy; the broker dropped the B queue")
	require.NoError(t, v.Release(ctx))
}
