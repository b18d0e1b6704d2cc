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
