package semdebug

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/keyed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSemaphoreSource_ReadsStatsAndErr(t *testing.T) {
	s := semaphore.New(5, semaphore.WithName("db"))
	require.NoError(t, s.Acquire(context.Background(), 3))
	src := sourceOf(s)
	snap := src.Snapshot()
	assert.Equal(t, int64(5), snap.Capacity)
	assert.Equal(t, int64(3), snap.InUse)
	assert.Equal(t, int64(2), snap.Available)
	assert.Equal(t, uint64(1), snap.Acquired)
	assert.False(t, snap.Broken)
	assert.Equal(t, s.Diagnostics(10), src.Diagnostics(10))

	s.Break(errors.New("shutting down"))
	snap = src.Snapshot()
	assert.True(t, snap.Broken)
	assert.Contains(t, snap.Cause, "shutting down")
}

func TestControllerSource_ShowsTheCountResource(t *testing.T) {
	c := admission.New(admission.Resources{Count: 4, Memory: 1000}, admission.WithName("reads"))
	p, err := c.Acquire(context.Background(), "scan", 100)
	require.NoError(t, err)
	defer p.Release()
	src := sourceOf(c)
	assert.Equal(t, "reads", src.Name())
	snap := src.Snapshot()
	assert.Equal(t, int64(4), snap.Capacity)
	assert.Equal(t, int64(1), snap.InUse)
	assert.Equal(t, int64(3), snap.Available)
	assert.Equal(t, uint64(1), snap.Acquired)
	assert.Contains(t, snap.Details, Detail{"memory in use", "100 of 1000 bytes"})
	assert.Contains(t, src.Diagnostics(10), `"reads"`)
}

func TestGroupSource_SumsTheMembers(t *testing.T) {
	g := admission.NewGroup(admission.Resources{Count: 2, Memory: 1000}, admission.WithName("all"))
	a, b := g.Add("a", 1), g.Add("b", 1)
	pa, err := a.Acquire(context.Background(), "x", 10)
	require.NoError(t, err)
	defer pa.Release()
	pb, err := b.Acquire(context.Background(), "y", 10)
	require.NoError(t, err)
	defer pb.Release()
	src := sourceOf(g)
	assert.Equal(t, "all", src.Name())
	snap := src.Snapshot()
	assert.Equal(t, int64(4), snap.Capacity, "each member's count limit is the group's")
	assert.Equal(t, int64(2), snap.InUse)
	assert.Equal(t, uint64(2), snap.Acquired)
	assert.Contains(t, snap.Details, Detail{`member "a"`, "1 shares, count 1/2, 0 queued"})
	assert.Contains(t, src.Diagnostics(10), "all")
}

// A keyed set is shown by what it holds over all keys, with its global
// semaphore's capacity, and its break.
func TestSourceOf_KeyedSetShowsHeldUnitsAndTheGlobalsCapacity(t *testing.T) {
	global := semaphore.New(8, semaphore.WithName("uploads-all"))
	set := keyed.New(2, keyed.WithName("uploads"), keyed.WithGlobal(global))
	u, err := set.Acquire(context.Background(), "alice", 2)
	require.NoError(t, err)
	src := sourceOf(set)
	assert.Equal(t, "uploads", src.Name())
	assert.Equal(t, "keyed set", src.Kind())
	snap := src.Snapshot()
	assert.Equal(t, int64(2), snap.InUse)
	assert.Equal(t, int64(8), snap.Capacity)
	assert.Equal(t, int64(6), snap.Available)
	u.Release()
	set.Break(errors.New("closing"))
	snap = src.Snapshot()
	assert.True(t, snap.Broken)
	assert.Contains(t, snap.Cause, "closing")
}

// A keyed set with a limit of its own is shown against it, with the shares of
// the keys that hold the most.
func TestSourceOf_KeyedSetWithALimitShowsItAndTheShares(t *testing.T) {
	set := keyed.New(4, keyed.WithName("tenants"), keyed.WithLimit(6),
		keyed.WithWeightFunc(func(k string) int64 { return int64(len(k)) }))
	a, _ := set.TryAcquire("a", 4)  // weight 1 of 3: share 2, borrows 2
	b, _ := set.TryAcquire("bb", 1) // weight 2 of 3: share 4
	snap := sourceOf(set).Snapshot()
	assert.Equal(t, int64(6), snap.Capacity)
	assert.Equal(t, int64(5), snap.InUse)
	assert.Equal(t, int64(1), snap.Available)
	assert.False(t, snap.Unlimited)
	assert.Equal(t, Detail{`key "a"`, "held 4, share 2, borrowed 2; weight 1, guarantee 0, capacity 4; 0 waiting"}, snap.Details[1])
	assert.Equal(t, Detail{`key "bb"`, "held 1, share 4, borrowed 0; weight 2, guarantee 0, capacity 4; 0 waiting"}, snap.Details[2])
	a.Release()
	b.Release()
}

// An admission controller's break shows on the page, with its cause.
func TestSourceOf_ControllerShowsItsBreak(t *testing.T) {
	c := admission.New(admission.Resources{Count: 1}, admission.WithName("reads"))
	src := sourceOf(c)
	assert.False(t, src.Snapshot().Broken)
	c.Break(errors.New("closing"))
	snap := src.Snapshot()
	assert.True(t, snap.Broken)
	assert.Equal(t, `admission "reads": broken: closing`, snap.Cause)
}

// A keyed set without a global semaphore limits each key only: the page says it
// has no limit in total rather than a capacity of 0.
func TestKeyedSource_WithoutAGlobalLimitShowsNoLimit(t *testing.T) {
	set := keyed.New(2, keyed.WithName("uploads"))
	u, err := set.Acquire(context.Background(), "alice", 1)
	require.NoError(t, err)
	defer u.Release()
	snap := sourceOf(set).Snapshot()
	assert.True(t, snap.Unlimited)
	assert.Equal(t, int64(1), snap.InUse)
	assert.NotZero(t, snap.Unknown&QueuedField, "a keyed set does not count the calls that queued")

	r := newRegistry()
	defer registerKept(r, set)()
	_, _, body := get(t, newHandler(r), "/d/?format=text")
	assert.Regexp(t, `"uploads" +keyed set +no limit +1 +no limit +0 `, body)
	_, _, body = get(t, newHandler(r), "/d/?format=json")
	assert.Contains(t, body, `"unlimited": true,
      "capacity": null,
      "in_use": 1,
      "available": null,`)
}

// The page takes its counters from the core's Stats, which count a call by how
// it ended, not by what its error matches: a wait cancelled with a cause that
// matches a sentinel is cancelled, whatever the cause.
func TestSemaphoreSource_CountsCallsAsTheCoreDecided(t *testing.T) {
	for _, cause := range []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull,
		semaphore.ErrShed, semaphore.ErrTooLarge} {
		s := semaphore.New(1, semaphore.WithName("db"))
		require.NoError(t, s.Acquire(context.Background(), 1))
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan error)
		go func() { done <- s.Acquire(ctx, 1) }()
		require.Eventually(t, func() bool { return s.Waiters() == 1 }, 10*time.Second, time.Millisecond)
		cancel(cause)
		require.Error(t, <-done)
		snap := sourceOf(s).Snapshot()
		assert.Equal(t, Snapshot{Cancelled: 1, Queued: 1, Acquired: 1}, Snapshot{Cancelled: snap.Cancelled,
			Queued: snap.Queued, Acquired: snap.Acquired, TimedOut: snap.TimedOut, Rejected: snap.Rejected,
			Shed: snap.Shed, Broken: snap.Broken}, "cancelled with cause %v", cause)
	}
}

// An admission controller counts a full queue and a shed request together: the
// page shows neither rejected nor shed as a number it does not have, and gives
// admission's own count among the details.
func TestControllerSource_ShowsCancelledRejectedAndShedUnderTheirOwnNames(t *testing.T) {
	c := admission.New(admission.Resources{Count: 1}, admission.WithName("reads"), admission.WithMaxWaiters(1))
	p, err := c.Acquire(context.Background(), "read", 0)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error)
	go func() {
		_, err := c.Acquire(ctx, "read", 0)
		waited <- err
	}()
	require.Eventually(t, func() bool { return c.Stats().Waiters == 1 }, 10*time.Second, time.Millisecond)
	_, err = c.Acquire(context.Background(), "read", 0)
	o, ok := semaphore.OutcomeOf(err)
	require.True(t, ok)
	require.Equal(t, semaphore.QueueFull, o)
	cancel()
	require.ErrorIs(t, <-waited, context.Canceled)
	p.Release()
	snap := sourceOf(c).Snapshot()
	assert.Zero(t, snap.Unknown&(CancelledField|RejectedField|ShedField), "admission counts each of them")
	assert.Equal(t, uint64(1), snap.Rejected)
	assert.Equal(t, uint64(1), snap.Cancelled)
	assert.Zero(t, snap.Shed, "a full queue is a rejection, not a shed")
	r := newRegistry()
	defer registerKept(r, c)()
	_, _, body := get(t, newHandler(r), "/d/1?format=text")
	assert.Regexp(t, `\nrejected +1 \(`, body)
	assert.Regexp(t, `\nshed +0 \(`, body)
}

// A Limiter the page does not know shows its name, its type and its dump, and
// no number at all.
func TestDumpSource_ShowsNameKindAndDumpOnly(t *testing.T) {
	r := newRegistry()
	d := &dumper{name: "other"}
	defer registerKept(r, d)()
	h := newHandler(r)
	_, _, body := get(t, h, "/d/?format=text")
	assert.Regexp(t, `"other" +semdebug.dumper( +-){11}\n`, body)
	_, _, body = get(t, h, "/d/1")
	assert.Contains(t, body, `<pre id="diagnostics">dump of other`)
	assert.NotContains(t, body, `class="chart"`, "nothing to chart")
	_, _, body = get(t, h, "/d/?format=json")
	for _, field := range []string{"capacity", "in_use", "available", "waiters", "broken", "acquired", "shed"} {
		assert.Contains(t, body, `"`+field+`": null`)
	}
	runtime.KeepAlive(d)
}

func TestLimiterSource_ShowsTheLimitTheEstimateAndEachLevel(t *testing.T) {
	l := adaptive.New(semaphore.New(4, semaphore.WithName("api")), nil)
	c, err := l.AcquireN(adaptive.ContextWithPriority(context.Background(), adaptive.Critical), 3)
	require.NoError(t, err)
	defer c.Release()
	src := sourceOf(l)
	assert.Equal(t, "api", src.Name())
	assert.Equal(t, "adaptive limiter", src.Kind())
	snap := src.Snapshot()
	assert.Equal(t, int64(4), snap.Capacity)
	assert.Equal(t, int64(3), snap.InUse)
	assert.Equal(t, int64(1), snap.Available)
	assert.Equal(t, uint64(1), snap.Acquired)
	assert.Equal(t, QueuedField|TimedOutField|CancelledField|RejectedField|BrokenField, snap.Unknown)
	assert.Contains(t, snap.Details, Detail{"capacity estimate", "unknown"})
	assert.Contains(t, snap.Details, Detail{"level critical", "3 units in flight, 0 waiting, 1 acquired, 0 shed (0 at once)"})
	assert.Contains(t, snap.Details, Detail{"level sheddable", "0 units in flight, 0 waiting, 0 acquired, 0 shed (0 at once)"})
	assert.Equal(t, l.Diagnostics(10), src.Diagnostics(10))
}
