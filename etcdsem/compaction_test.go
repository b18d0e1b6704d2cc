package etcdsem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A compaction under a waiter's watch: the handle cannot know what happened in
// the revisions it missed, so its waiter fails with ErrLost and its key is
// deleted; the handle keeps working, and its next acquire is granted.
func TestCompaction_UnderTheWatchFailsWaitersWithErrLostAndTheHandleKeepsWorking(t *testing.T) {
	// Compaction is cluster-wide: a member of its own, so that the shared
	// member's history stays whole for the other tests' checkers.
	e, err := startEmbedded(t, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(e.Close)
	ep := e.Config().ListenClientUrls[0].String()
	name := testName(t)
	direct := newClient(t, ep)
	px := newProxy(t, ep)
	a := newSem(t, direct, name, WithCapacity(1))
	b := newSem(t, newClient(t, px.endpoint()), name)
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)

	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx, 1)
		errc <- err
	}()
	waitWaiters(t, a, 1)

	// Cut b off, write past its watch, compact those revisions away, then let
	// b reconnect: its watch resumes from a compacted revision.
	px.hold(true, true)
	require.NoError(t, a.Resize(ctx, 1))
	require.NoError(t, a.Resize(ctx, 1))
	resp, err := direct.Get(ctx, keysOf(name).capKey)
	require.NoError(t, err)
	checkHistory(t, direct, name, log) // the last check that can read the whole history
	_, err = direct.Compact(ctx, resp.Header.Revision)
	require.NoError(t, err)
	px.release()
	px.dropConns()

	select {
	case err := <-errc:
		assert.ErrorIs(t, err, ErrLost, "the waiter cannot know whether it was granted in the gap")
		assert.ErrorContains(t, err, "compacted")
		assert.ErrorContains(t, err, name)
	case <-ctx.Done():
		t.Fatalf("the waiter was not failed after the compaction:\n%s", b.debugState())
	}
	require.Eventually(t, func() bool { return waiters(t, a) == 0 }, 10*time.Second, 20*time.Millisecond,
		"the failed waiter's key is deleted")
	assert.Equal(t, int64(1), h.Count(), "a holder on another handle is untouched")

	// The handle keeps working: it waits in the queue and is granted.
	got := make(chan error, 1)
	go func() {
		u, err := b.Acquire(ctx, 1)
		if err == nil {
			assert.Equal(t, int64(1), u.Count())
			err = u.Release(ctx)
		}
		got <- err
	}()
	waitWaiters(t, a, 1)
	require.NoError(t, h.Release(ctx))
	require.NoError(t, <-got, "acquire after the resync:\n%s", b.debugState())
	require.Eventually(t, func() bool { return noQueueKeys(t, direct, name) }, 10*time.Second, 20*time.Millisecond)
}

// The same for a Set: its one watch resumes from a compacted revision, every
// key in memory is read again, the waiter fails with ErrLost, and the Set
// keeps working.
func TestCompaction_UnderASetsWatchFailsItsWaitersAndTheSetKeepsWorking(t *testing.T) {
	e, err := startEmbedded(t, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(e.Close)
	ep := e.Config().ListenClientUrls[0].String()
	name := testName(t)
	capOf := func(string) int64 { return 1 }
	direct := newClient(t, ep)
	px := newProxy(t, ep)
	a := newSet(t, direct, name, capOf)
	b := newSet(t, newClient(t, px.endpoint()), name, capOf)
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	key := "k"

	h, err := a.Acquire(ctx, key, 1)
	require.NoError(t, err)
	log.add(h)
	errc := make(chan error, 1)
	go func() {
		_, err := b.Acquire(ctx, key, 1)
		errc <- err
	}()
	waitFor(t, "b's waiter is written", func() bool { return setKeysIn(t, direct, name, &key) == 2 })

	// Cut b off, write past its watch (another key of the Set), compact
	// those revisions away, then let b reconnect without them.
	px.hold(true, true)
	for range 2 {
		u, err := a.Acquire(ctx, "other", 1)
		require.NoError(t, err)
		log.add(u)
		require.NoError(t, u.Release(ctx))
	}
	resp, err := direct.Get(ctx, "x")
	require.NoError(t, err)
	checkSetHistory(t, direct, name, capOf, log) // the last check that can read the whole history
	_, err = direct.Compact(ctx, resp.Header.Revision)
	require.NoError(t, err)
	// Drop b's connections before letting bytes through: the events the
	// proxy held back would otherwise reach b, and its watch would resume
	// after the compacted revisions.
	px.dropConns()
	px.release()

	select {
	case err := <-errc:
		assert.ErrorIs(t, err, ErrLost, "the waiter cannot know whether it was granted in the gap")
		assert.ErrorContains(t, err, "compacted")
	case <-ctx.Done():
		t.Fatalf("the waiter was not failed after the compaction:\n%s", b.debugState())
	}
	require.Eventually(t, func() bool { return setKeysIn(t, direct, name, &key) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the failed waiter's key is deleted")

	got := make(chan error, 1)
	go func() {
		u, err := b.Acquire(ctx, key, 1)
		if err == nil {
			err = u.Release(ctx)
		}
		got <- err
	}()
	waitFor(t, "b waits again", func() bool { return setKeysIn(t, direct, name, &key) == 2 })
	require.NoError(t, h.Release(ctx))
	require.NoError(t, <-got, "acquire after the resync:\n%s", b.debugState())
	require.Eventually(t, func() bool { return setKeysIn(t, direct, name, nil) == 0 }, 10*time.Second, 20*time.Millisecond)
}
