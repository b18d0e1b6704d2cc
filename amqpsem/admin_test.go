package amqpsem

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Removing slots never revokes a holder: it keeps its B queue, Verify tells it
// the slot was removed, WaitReleased waits for it, and a waiter left too
// large fails with ErrTooLarge. Adding slots grants waiters.
func TestAdmin_RemoveNeverRevokesAndWaitReleasedWaitsForTheHolder(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(3))
	op := newSem(t, b.URL, name)
	ctx := testCtx(t, time.Minute)
	u, err := s.Acquire(ctx, 3)
	require.NoError(t, err)
	removed, err := op.RemoveSlots(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 2}, removed, "highest first")
	assert.Equal(t, int64(3), u.Count(), "the holder keeps every slot")
	err = u.Verify(ctx)
	assert.ErrorIs(t, err, ErrSlotRemoved)
	assert.ErrorContains(t, err, "slots 2,3 removed")
	st, err := op.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Slots)
	assert.Equal(t, []int{1, 2, 3}, st.Holders, "removed slots still held are shown")
	assert.Equal(t, 1, st.Held)

	waited := make(chan error, 1)
	go func() { waited <- op.WaitReleased(ctx, removed) }()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = op.WaitReleased(short, removed)
	cancel()
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.ErrorContains(t, err, "slots 3,2 still held")
	select {
	case err := <-waited:
		t.Fatalf("WaitReleased returned %v while the holder holds", err)
	default:
	}
	require.NoError(t, u.Return(ctx, 2), "the holder gives back its two highest slots")
	require.NoError(t, <-waited)
	assert.Equal(t, []int{1}, u.Slots())

	_, err = s.Acquire(ctx, 2)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge, "more than the slots left")
	got := make(chan *Units, 1)
	go func() {
		v, err := s.Acquire(ctx, 1)
		assert.NoError(t, err)
		got <- v
	}()
	waitWaiting(t, s, 1)
	n, err := op.AddSlots(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	v := <-got
	assert.Equal(t, []int{2}, v.Slots(), "an added slot goes to the waiter")
	require.NoError(t, u.Release(ctx))
	require.NoError(t, v.Release(ctx))

	removed, err = op.Resize(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 2}, removed)
	removed, err = op.Resize(ctx, 4)
	require.NoError(t, err)
	assert.Empty(t, removed)
	removed, err = op.Destroy(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{4, 3, 2, 1}, removed)
	_, err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, semaphore.ErrTooLarge, "a destroyed semaphore has no slots")
}

// The administration mutex serializes administrators, of this package or
// not: while a raw client holds the mutex queue, a change waits, and ends by
// its context.
func TestAdmin_WaitsForTheAdministrationMutex(t *testing.T) {
	b := broker(t)
	name := testName(t)
	op := newSem(t, b.URL, name, WithSlots(1))
	ctx := testCtx(t, time.Minute)
	raw, err := amqp.Dial(b.URL)
	require.NoError(t, err)
	defer raw.Close()
	ch, err := raw.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclare(name, false, false, true, false, nil)
	require.NoError(t, err, "the raw administrator takes the mutex")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = op.AddSlots(short, 1)
	cancel()
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.ErrorContains(t, err, "held by another client")
	added := make(chan error, 1)
	go func() {
		_, err := op.AddSlots(ctx, 1)
		added <- err
	}()
	time.Sleep(200 * time.Millisecond) // the add waits on the mutex; the raw administrator's change goes first
	_, err = ch.QueueDelete(name, false, false, false)
	require.NoError(t, err)
	require.NoError(t, <-added)
	n, err := op.Slots(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

// Overshooting deletes stray A queues above the maximum (left by a failed
// administrator or by hand), which an addition would otherwise join to the
// semaphore.
func TestAdmin_OvershootDeletesStrayQueuesAboveTheMaximum(t *testing.T) {
	b := broker(t)
	name := testName(t)
	op := newSem(t, b.URL, name, WithSlots(2), WithOvershoot(4))
	ctx := testCtx(t, time.Minute)
	raw, err := amqp.Dial(b.URL)
	require.NoError(t, err)
	defer raw.Close()
	ch, err := raw.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclare(name+"-4-A", true, false, false, false, nil)
	require.NoError(t, err, "a stray slot queue with a gap below it")
	n, err := op.AddSlots(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "slot 4 is not joined: the overshoot deleted it first")
	got, err := op.Slots(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, got)
}

// Two declares racing for one slot: the loser's channel is closed by the
// broker (RESOURCE_LOCKED); the walk opens another and goes on, and after
// WithAttempts failures gives back what it took and fails with ErrContended.
func TestTryAcquire_ResourceLockedRetriesThenFailsContended(t *testing.T) {
	b := broker(t)
	name := testName(t)
	s := newSem(t, b.URL, name, WithSlots(3), WithAttempts(2, time.Millisecond))
	ctx := testCtx(t, time.Minute)
	raw, err := amqp.Dial(b.URL)
	require.NoError(t, err)
	defer raw.Close()
	ch, err := raw.Channel()
	require.NoError(t, err)
	// Another client takes each slot between the walk's probe and its declare.
	s.beforeDeclare = func(slot int) {
		_, err := ch.QueueDeclare(holdQueue(name, slot), false, false, true, false, nil)
		assert.NoError(t, err)
	}
	_, ok, err := s.TryAcquire(ctx, 1)
	assert.False(t, ok)
	assert.ErrorIs(t, err, ErrContended)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), st.LockedRetries)
	assert.Equal(t, int64(1), st.Contended)
	assert.Empty(t, st.Mine)
	// One race lost, then a free slot: the walk goes on with the next one.
	s.beforeDeclare = func(slot int) {
		if slot == 3 {
			_, err := ch.QueueDeclare(holdQueue(name, slot), false, false, true, false, nil)
			assert.NoError(t, err)
		}
	}
	require.NoError(t, raw.Close()) // frees slots 1 and 2
	raw, err = amqp.Dial(b.URL)
	require.NoError(t, err)
	ch, err = raw.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclare(holdQueue(name, 1), false, false, true, false, nil)
	require.NoError(t, err)
	_, err = ch.QueueDeclare(holdQueue(name, 2), false, false, true, false, nil)
	require.NoError(t, err)
	_, err = ch.QueueDelete(holdQueue(name, 2), false, false, false)
	require.NoError(t, err)
	s.beforeDeclare = nil
	u, ok, err := s.TryAcquire(ctx, 1)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []int{2}, u.Slots())
	require.NoError(t, u.Release(ctx))
}

// Names that would not form the protocol's queues are refused before any
// request, with an error that says why and quotes at most 64 bytes of them.
func TestCheckName_RefusesNamesThatFormNoValidQueues(t *testing.T) {
	long := strings.Repeat("x", 5000)
	cases := map[string]string{
		"":                          "empty",
		long:                        "5000 bytes, more than MaxNameLen (240)",
		"a\nb":                      "control character U+000A at byte 1",
		"tab\there":                 "control character U+0009",
		"bad\xffutf8":               "not valid UTF-8",
		"amq.jobs":                  `reserved prefix "amq."`,
		"amqpsem.x":                 `reserved prefix "amqpsem."`,
		"jobs-1-A":                  "another semaphore's slot queue",
		"jobs-12-B":                 "another semaphore's slot queue",
		strings.Repeat("é\n", 2500): "more than MaxNameLen",
	}
	for name, why := range cases {
		err := CheckName(name)
		require.Error(t, err, "%q", name)
		assert.ErrorIs(t, err, ErrBadName)
		assert.Contains(t, err.Error(), why)
		assert.NotContains(t, err.Error(), "\n")
		assert.LessOrEqual(t, len(err.Error()), 400, "the message stays short")
		_, err = New(context.Background(), "amqp://127.0.0.1:1/", name)
		assert.ErrorIs(t, err, ErrBadName, "New refuses it before connecting")
	}
	for _, good := range []string{"jobs", "<b>jobs</b> & \"co\"", "jobs-1-a", "jobs-A", "jobs-01-A", "x-1-A-2", "日本語", strings.Repeat("y", MaxNameLen)} {
		assert.NoError(t, CheckName(good), "%q", good)
	}
	long240 := strings.Repeat("z", MaxNameLen)
	assert.LessOrEqual(t, len(slotQueue(long240, MaxSlots)), 255, "the longest queue fits AMQP's short string")
}

// A name with markup and quotes works on a real broker, and every message
// quotes it on one line.
func TestErrors_HostileNamesAreQuotedOnOneLine(t *testing.T) {
	b := broker(t)
	ctx := testCtx(t, time.Minute)
	name := `<b>jobs</b> "x" & é ` + strconv.Itoa(int(time.Now().UnixNano()%1000))
	s, err := New(ctx, b.URL, name, WithSlots(1))
	require.NoError(t, err)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, u.Release(ctx))
	_, err = s.Destroy(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Acquire(ctx, 1)
	assert.Equal(t, "amqpsem "+strconv.Quote(name)+": acquire 1 unit: closed", err.Error())
}

// Each meaning shared with the in-process semaphore matches the core's
// sentinel, and an acquire's error carries the core's outcome.
func TestErrors_SharedMeaningsMatchTheCoreSentinelsAndOutcomes(t *testing.T) {
	b := broker(t)
	ctx := testCtx(t, time.Minute)
	s := newSem(t, b.URL, testName(t), WithSlots(1))
	h, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	defer h.Release(ctx)
	cases := []struct {
		name    string
		err     error
		want    error
		outcome semaphore.Outcome
	}{
		{"too large", func() error { _, err := s.Acquire(ctx, 2); return err }(), semaphore.ErrTooLarge, semaphore.TooLarge},
		{"timeout", func() error { _, err := s.AcquireTimeout(ctx, 50*time.Millisecond, 1); return err }(), semaphore.ErrTimedOut, semaphore.TimedOut},
		{"cancelled", func() error {
			c, cancel := context.WithCancelCause(ctx)
			cancel(semaphore.ErrBroken) // a cause is a cause, not how the call ended
			_, err := s.Acquire(c, 1)
			return err
		}(), context.Canceled, semaphore.Cancelled},
	}
	for _, c := range cases {
		assert.ErrorIs(t, c.err, c.want, c.name)
		o, ok := semaphore.OutcomeOf(c.err)
		assert.True(t, ok, c.name)
		assert.Equal(t, c.outcome, o, c.name)
		assert.NotContains(t, c.err.Error(), "\n")
	}
	s.Break(errors.New("shutting down"))
	_, err = s.Acquire(ctx, 1)
	assert.ErrorIs(t, err, semaphore.ErrBroken)
	assert.ErrorContains(t, err, "broken: shutting down")
	o, _ := semaphore.OutcomeOf(err)
	assert.Equal(t, semaphore.Broken, o)
	for _, own := range []error{ErrLost, ErrClosed, ErrBadName, ErrContended, ErrRefused, ErrBlocked, ErrSlotRemoved} {
		for _, shared := range []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrTooLarge} {
			assert.NotErrorIs(t, own, shared)
		}
	}
}

// Break fails this handle's waiters and later acquires; holders keep their
// slots; Drain returns once they have given them back.
func TestBreak_FailsWaitersThenDrainWaitsForHolders(t *testing.T) {
	b := broker(t)
	s := newSem(t, b.URL, testName(t), WithSlots(1))
	ctx := testCtx(t, time.Minute)
	require.NoError(t, s.Drain(ctx), "nothing held: at once")
	h, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	errs := make(chan error, 3)
	for range 3 {
		go func() { _, err := s.Acquire(ctx, 1); errs <- err }()
	}
	waitWaiting(t, s, 3)
	s.Break(errors.New("shutting down"))
	for range 3 {
		assert.ErrorIs(t, <-errs, semaphore.ErrBroken)
	}
	_, _, err = s.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, semaphore.ErrBroken)
	assert.Equal(t, int64(1), h.Count(), "holders keep their slots")
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = s.Drain(short)
	cancel()
	assert.ErrorIs(t, err, semaphore.ErrTimedOut)
	assert.ErrorContains(t, err, "1 slots still held")
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(ctx) }()
	require.NoError(t, h.Release(ctx))
	require.NoError(t, <-drained)
	assert.Panics(t, func() { s.Break(nil) })
}

// A broker that refuses: a user without permission to declare queues gets
// ErrRefused with the broker's reason, from TryAcquire and from a waiting
// Acquire, which ends.
func TestBroker_RefusalIsAClearErrorThatEndsTheCall(t *testing.T) {
	b := broker(t)
	name := testName(t)
	ctx := testCtx(t, time.Minute)
	newSem(t, b.URL, name, WithSlots(1))
	ro := newSem(t, strings.Replace(b.URL, "guest:guest", readOnlyUser.Name+":"+readOnlyUser.Password, 1), name)
	_, _, err := ro.TryAcquire(ctx, 1)
	assert.ErrorIs(t, err, ErrRefused)
	assert.ErrorContains(t, err, "ACCESS_REFUSED")
	var ae *amqp.Error
	assert.ErrorAs(t, err, &ae)
	_, err = ro.Acquire(ctx, 1)
	assert.ErrorIs(t, err, ErrRefused, "a waiting acquire ends too")
	_, err = ro.AddSlots(ctx, 1)
	assert.ErrorIs(t, err, ErrRefused, "administration too")
}
