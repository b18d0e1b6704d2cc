package etcdsem

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The headline guarantee: a holder cut off from etcd is told it lost its units
// (Lost closes) strictly before anyone else can be granted them: before the
// server deletes its key, which every other grant waits for.
func TestPartition_LostClosesBeforeTheNextGrant(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	px := newProxy(t, ep)
	acli := newClient(t, px.endpoint())
	a := newSem(t, acli, name, WithCapacity(1), WithTTL(2*time.Second), WithSafetyMargin(500*time.Millisecond))
	obs := newClient(t, ep)
	b := newSem(t, newClient(t, ep), name)
	log := &grantLog{}
	ctx := testCtx(t, time.Minute)

	for round := range 2 {
		h, err := a.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(h)
		// An observer on its own connection timestamps the deletion of h's key.
		wctx, wcancel := context.WithCancel(ctx)
		wch := obs.Watch(wctx, keysOf(name).qprefix, clientv3.WithPrefix(), clientv3.WithRev(h.Token()+1))
		deleted := make(chan time.Time, 1)
		go func() {
			for resp := range wch {
				for _, ev := range resp.Events {
					if ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > h.Token() && strings.HasSuffix(string(ev.Kv.Key), h.req().key[strings.LastIndex(h.req().key, "/"):]) {
						deleted <- time.Now()
						return
					}
				}
			}
		}()
		granted := make(chan time.Time, 1)
		var next *Units
		go func() {
			u, err := b.Acquire(ctx, 1)
			assert.NoError(t, err)
			next = u
			granted <- time.Now()
		}()
		waitWaiters(t, b, 1)

		// Let a renewal through first, so the loss is counted from one.
		first := deadlineOf(h.req().lease)
		require.Eventually(t, func() bool { return deadlineOf(h.req().lease).After(first) }, 10*time.Second, 10*time.Millisecond)
		px.hold(true, true)
		heldAt := time.Now()
		var lostAt time.Time
		select {
		case <-h.Lost():
			lostAt = time.Now()
		case <-ctx.Done():
			t.Fatal("Lost never closed")
		}
		deletedAt := <-deleted
		grantedAt := <-granted
		wcancel()
		assert.True(t, lostAt.Before(deletedAt), "Lost closed %v after the key was deleted", lostAt.Sub(deletedAt))
		assert.True(t, lostAt.Before(grantedAt), "Lost closed %v after the next grant", lostAt.Sub(grantedAt))
		// The last renewal that got through was sent before the cut, so Lost
		// is due at most TTL-margin after it (plus a late timer's slack).
		assert.LessOrEqual(t, lostAt.Sub(heldAt), 1500*time.Millisecond+400*time.Millisecond,
			"Lost closes TTL minus the margin after the last renewal sent")
		t.Logf("round %d: Lost closed %v before the key's deletion was seen and %v before the next grant",
			round, deletedAt.Sub(lostAt).Round(time.Millisecond), grantedAt.Sub(lostAt).Round(time.Millisecond))
		assert.ErrorIs(t, h.Err(), ErrLost)
		log.add(next)

		px.release()
		px.dropConns()
		assert.ErrorIs(t, h.Release(ctx), ErrLost, "releasing lost units reports the loss")
		require.NoError(t, next.Release(ctx))
	}
	checkHistory(t, obs, name, log)
}

// Renewals keep units: a holder keeps them for several TTLs, and each renewal
// moves the loss deadline to its send time plus the TTL minus the margin.
func TestLease_RenewalsKeepUnitsPastTheTTL(t *testing.T) {
	fulltest.Long(t)
	// A TTL long enough that a renewal (every third of it) gets through on a
	// loaded machine under the race detector; the margin leaves 3s per renewal.
	const ttl, margin = 4 * time.Second, time.Second
	log := &grantLog{}
	checkHistoryAtEnd(t, sharedEndpoint(t), testName(t), log)
	cli := newClient(t, sharedEndpoint(t))
	s := newSem(t, cli, testName(t), WithCapacity(1), WithTTL(ttl), WithSafetyMargin(margin))
	ctx := testCtx(t, 30*time.Second)
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	l := u.req().lease
	first := deadlineOf(l)
	// Until renewals have moved the deadline a whole TTL on, past the first
	// lease's expiry (its deadline plus the margin): the units outlive one TTL.
	// A loss ends the wait too, and fails below.
	require.Eventually(t, func() bool {
		select {
		case <-u.Lost():
			return true
		default:
			return deadlineOf(l).After(first.Add(ttl))
		}
	}, 20*time.Second, 20*time.Millisecond, "renewals moved the deadline")
	select {
	case <-u.Lost():
		t.Fatalf("lost while renewed: %v", u.Err())
	default:
	}
	assert.True(t, time.Now().After(first.Add(margin)),
		"held past the time the first lease would have expired without renewals")
	// The deadline is a renewal's send time plus TTL minus margin, and the last
	// renewal was sent at most a third of the TTL ago (more on a loaded machine).
	assert.WithinDuration(t, time.Now().Add(ttl-margin), deadlineOf(l), ttl/2,
		"the deadline is a renewal's send time plus TTL minus margin")
	require.NoError(t, u.Release(ctx))
}

// Over a link slower than a third of the TTL, a lease is renewed in time
// from its grant on: the first renewal goes as soon as the grant's reply
// arrives (a third of the TTL after the grant's send, or at once if that has
// passed), not a third of the TTL after the reply, so the first deadline,
// counted from the grant's send, is met; the units are kept for three TTLs.
func TestLease_ASlowLinkKeepsTheLeaseFromItsGrant(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	px := newProxy(t, ep)
	// Each reply takes 2.5s: a renewal sent as the grant's reply arrives is
	// acknowledged 5s after the grant's send, within the TTL less the margin
	// (5.8s); one sent a third of the TTL later is not.
	const ttl = 6 * time.Second
	s := newSem(t, newClient(t, px.endpoint()), name, WithCapacity(1), WithTTL(ttl), WithSafetyMargin(200*time.Millisecond))
	t.Cleanup(func() { px.delay(0) }) // before s's Close
	px.delay(2500 * time.Millisecond)
	ctx := testCtx(t, time.Minute)
	u, err := s.Acquire(ctx, 1) // the lease is granted over the slow link
	require.NoError(t, err)
	log.add(u)
	assert.Never(t, func() bool {
		select {
		case <-u.Lost():
			return true
		default:
			return false
		}
	}, 3*ttl, 50*time.Millisecond, "the units are lost over a link that renews in time: %v", u.Err())
	px.delay(0)
	require.NoError(t, u.Release(ctx))
}

// An Acquire whose every lease is lost before its first use (etcd's reply
// to each grant takes longer than the TTL less the margin) ends with ErrLost,
// saying so, rather than granting lease after lease for as long as its
// context lets it; once the link is fast again the handle grants.
func TestLease_ALinkSlowerThanTheTTLEndsTheAcquire(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	px := newProxy(t, ep)
	const ttl = 2 * time.Second
	s := newSem(t, newClient(t, px.endpoint()), name, WithCapacity(1), WithTTL(ttl), WithSafetyMargin(500*time.Millisecond))
	t.Cleanup(func() { px.delay(0) }) // before s's Close
	px.delay(1800 * time.Millisecond) // past the TTL less the margin, 1.5s
	ctx := testCtx(t, 30*time.Second)
	u, err := s.Acquire(ctx, 1)
	require.Error(t, err, "granted over a link slower than the TTL")
	assert.Nil(t, u)
	assert.ErrorIs(t, err, ErrLost)
	assert.NotErrorIs(t, err, semaphore.ErrTimedOut, "ended by its context")
	assert.Contains(t, err.Error(), "lost before their first use")
	assert.NoError(t, ctx.Err())
	px.delay(0)
	u, err = s.Acquire(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, u.Release(ctx))
}

func deadlineOf(l *lease) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// WithSemaphore cancels fn's context, with a cause wrapping ErrLost, when the
// units are lost.
func TestWithSemaphore_LossCancelsFnContext(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	px := newProxy(t, ep)
	a := newSem(t, newClient(t, px.endpoint()), name, WithCapacity(1), WithTTL(2*time.Second), WithSafetyMargin(500*time.Millisecond))
	ctx := testCtx(t, 30*time.Second)
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- WithSemaphore(ctx, a, 1, func(fctx context.Context) error {
			log.addHeld(a)
			close(started)
			<-fctx.Done()
			return context.Cause(fctx)
		})
	}()
	<-started
	px.hold(true, true)
	err := <-errc
	assert.ErrorIs(t, err, ErrLost, "fn saw the loss as its context's cause")
	px.release()
	px.dropConns()
}

// A Release whose RPC fails is finished by the handle: the units go on to the
// next caller once etcd is reachable again, with no retry by the caller and
// long before the handle's lease could expire (it is renewed all along).
func TestRelease_AFailedReleaseIsFinishedInTheBackground(t *testing.T) {
	fulltest.Fault(t)
	ep := sharedEndpoint(t)
	name := testName(t)
	px := newProxy(t, ep)
	a := newSem(t, newClient(t, px.endpoint()), name, WithCapacity(1), WithTTL(30*time.Second))
	b := newSem(t, newClient(t, ep), name)
	ctx := testCtx(t, time.Minute)

	u, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	px.hold(true, true)
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = u.Release(rctx)
	cancel()
	require.Error(t, err, "etcd was not reachable")
	require.NotErrorIs(t, err, ErrLost)
	px.dropConns() // the delete never reaches etcd
	px.release()

	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := b.Acquire(bctx, 1)
	require.NoError(t, err, "the failed release's key was deleted without a retry")
	require.NoError(t, v.Release(ctx))
	require.NoError(t, u.Release(ctx), "a retry after the background delete is fine")
}
