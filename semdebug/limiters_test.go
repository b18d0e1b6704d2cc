package semdebug

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/keyed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// objectText serves the text form of the page of the only object registered
// on r.
func objectText(t *testing.T, r *registry) string {
	t.Helper()
	_, _, body := get(t, newHandler(r), "/d/1?format=text")
	return body
}

// factRe matches a line of an object's text page: its name, then its value.
func fact(name, value string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` +` + regexp.QuoteMeta(value) + `$`)
}

// In use is what is held, never capacity - available: a broken semaphore that
// nobody holds has nothing in use, though nothing is available.
func TestPage_ABrokenSemaphoreNobodyHoldsHasNothingInUse(t *testing.T) {
	r := newRegistry()
	s := semaphore.New(4, semaphore.WithName("db"))
	defer registerKept(r, s)()
	s.Break(errors.New("closing"))
	page := objectText(t, r)
	assert.Regexp(t, fact("capacity", "4"), page)
	assert.Regexp(t, fact("in use", "0"), page)
	assert.Regexp(t, fact("available", "0"), page)
	assert.Regexp(t, fact("broken", `yes: "closing"`), page)
}

// A semaphore shrunk below what is held, or in debt after Consume, shows all
// it holds in use, more than its capacity.
func TestPage_AShrunkOrConsumedSemaphoreShowsAllItHolds(t *testing.T) {
	r := newRegistry()
	s := semaphore.New(4, semaphore.WithName("db"))
	defer registerKept(r, s)()
	require.True(t, s.TryAcquire(3))
	s.Consume(2)
	assert.Regexp(t, fact("in use", "5"), objectText(t, r), "3 held and 2 consumed")
	s.Resize(1)
	page := objectText(t, r)
	assert.Regexp(t, fact("capacity", "1"), page)
	assert.Regexp(t, fact("in use", "5"), page)
	s.Release(5)
	assert.Regexp(t, fact("in use", "0"), objectText(t, r))
}

// A keyed set without a global semaphore limits each key only: the page says
// it has no limit in total rather than a capacity of 0, and its unknown
// counter of calls that queued as "-".
func TestPage_AKeyedSetWithoutAGlobalLimitShowsNoLimit(t *testing.T) {
	set := keyed.New(2, keyed.WithName("uploads"))
	u, err := set.Acquire(context.Background(), "alice", 1)
	require.NoError(t, err)
	defer u.Release()
	r := newRegistry()
	defer registerKept(r, set)()
	_, _, body := get(t, newHandler(r), "/d/?format=text")
	assert.Regexp(t, `"uploads" +keyed set +no limit +1 +no limit +0 `, body)
	_, _, body = get(t, newHandler(r), "/d/?format=json")
	assert.Contains(t, body, `"unlimited": true,
      "capacity": null,
      "in_use": 1,
      "available": null,`)
	assert.Contains(t, body, `"queued": null,`)
	assert.Regexp(t, fact("queued", "-"), objectText(t, r))
}

// The page takes an object's counters from its Reading, which counts a call
// by how it ended, not by what its error matches: a wait cancelled with a
// cause that matches a sentinel is cancelled, whatever the cause.
func TestPage_CountsCallsAsTheCoreDecided(t *testing.T) {
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
		r := newRegistry()
		unregister := registerKept(r, s)
		page := objectText(t, r)
		unregister()
		for name, value := range map[string]string{"acquired": "1", "queued": "1", "cancelled": "1", "timed out": "0",
			"rejected": "0", "shed": "0", "broken": "no"} {
			assert.Regexp(t, `(?m)^`+name+` +`+value+`\b`, page, "cancelled with cause %v", cause)
		}
	}
}

// An admission controller counts a full queue and a shed request apart, and
// the page shows each under its own name.
func TestPage_AControllersRejectedAndShedAreItsOwn(t *testing.T) {
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
	r := newRegistry()
	defer registerKept(r, c)()
	body := objectText(t, r)
	assert.Regexp(t, `\nrejected +1 \(`, body)
	assert.Regexp(t, `\ncancelled +1 \(`, body)
	assert.Regexp(t, `\nshed +0 \(`, body, "a full queue is a rejection, not a shed")
}

// A Limiter that knows none of its numbers shows its name, its type (its
// Reading names no kind) and its dump, every number as "-", never as 0, and
// no chart.
func TestPage_ALimiterThatKnowsNoNumberShowsEachAsUnknown(t *testing.T) {
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
	for _, field := range []string{"capacity", "in_use", "available", "waiters", "broken", "acquired", "queued",
		"timed_out", "cancelled", "rejected", "shed"} {
		assert.Contains(t, body, `"`+field+`": null`)
	}
	page := objectText(t, r)
	for _, name := range []string{"capacity", "in use", "available", "waiters", "broken", "queued"} {
		assert.Regexp(t, fact(name, "-"), page)
	}
	runtime.KeepAlive(d)
}
