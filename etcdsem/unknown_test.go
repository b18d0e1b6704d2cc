package etcdsem

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// clientKeys returns the create revisions of the queue keys whose value names
// client.
func clientKeys(t testing.TB, cli *clientv3.Client, name, client string) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, keysOf(name).qprefix, clientv3.WithPrefix())
	require.NoError(t, err)
	var revs []int64
	for _, kv := range resp.Kvs {
		if _, _, c := parseValue(kv.Value); c == client {
			revs = append(revs, kv.CreateRevision)
		}
	}
	return revs
}

// An acquire whose write landed but whose reply was lost retries with the same
// key: it finds its write, keeps its place ahead of later waiters, and leaves
// no second key.
func TestAcquire_RetryAfterUnknownOutcomeKeepsItsPlace(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	direct := newClient(t, ep)
	b := newSem(t, direct, name, WithCapacity(1))
	c := newSem(t, newClient(t, ep), name)
	px := newProxy(t, ep)
	a := newSem(t, newClient(t, px.endpoint()), name, WithClientName("behind-proxy"))
	log := &grantLog{}
	ctx := testCtx(t, time.Minute)

	warmUp(t, ctx, a, log) // the lease exists before the replies stop
	h, err := b.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	// Replies to a stop reaching it: its write lands, its answer does not.
	px.hold(false, true)
	aGot := make(chan *Units, 1)
	go func() {
		u, err := a.Acquire(ctx, 1)
		assert.NoError(t, err)
		aGot <- u
	}()
	require.Eventually(t, func() bool { return len(clientKeys(t, direct, name, "behind-proxy")) == 1 }, 20*time.Second, 10*time.Millisecond)
	written := clientKeys(t, direct, name, "behind-proxy")[0]
	cGot := make(chan *Units, 1)
	go func() {
		u, err := c.Acquire(ctx, 1)
		assert.NoError(t, err)
		cGot <- u
	}()
	waitWaiters(t, b, 2)
	// The connection breaks; the retry goes over a new one.
	px.release()
	px.dropConns()
	require.NoError(t, h.Release(ctx))
	ua := <-aGot
	log.add(ua)
	assert.Equal(t, written, ua.Token(), "the retry found its first write")
	assert.Equal(t, []int64{written}, clientKeys(t, direct, name, "behind-proxy"), "no second key")
	select {
	case <-cGot:
		t.Fatal("a later waiter was granted ahead of the retried acquire")
	default:
	}
	require.NoError(t, ua.Release(ctx))
	uc := <-cGot
	log.add(uc)
	require.NoError(t, uc.Release(ctx))
	checkHistory(t, direct, name, log)
}

// An acquire that gives up while its write's outcome is unknown leaves no
// ghost key: the write that landed is deleted once it is seen.
func TestAcquire_GivingUpDuringUnknownOutcomeLeavesNoGhost(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	direct := newClient(t, ep)
	b := newSem(t, direct, name, WithCapacity(1))
	px := newProxy(t, ep)
	a := newSem(t, newClient(t, px.endpoint()), name, WithClientName("ghost"))
	log := &grantLog{}
	ctx := testCtx(t, time.Minute)
	warmUp(t, ctx, a, log) // the lease exists before the replies stop
	h, err := b.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)

	px.hold(false, true)
	actx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Acquire(actx, 1)
		errc <- err
	}()
	require.Eventually(t, func() bool { return len(clientKeys(t, direct, name, "ghost")) == 1 }, 20*time.Second, 10*time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	px.release()
	px.dropConns()
	require.Eventually(t, func() bool { return len(clientKeys(t, direct, name, "ghost")) == 0 }, 20*time.Second, 10*time.Millisecond, "the ghost key is removed")
	require.NoError(t, h.Release(ctx))
	// And a grant that races the give-up passes on: nothing is stuck.
	u, err := b.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	require.NoError(t, u.Release(ctx))
	checkHistory(t, direct, name, log)
}

// warmUp acquires and releases a unit through s, so that its lease exists.
func warmUp(t testing.TB, ctx context.Context, s *Semaphore, log *grantLog) {
	t.Helper()
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	require.NoError(t, u.Release(ctx))
}

// A write of this handle that lands after its caller is done (a frozen server
// executing a request the client already retried elsewhere) is a ghost: the
// handle deletes it when it sees it, so it cannot hold units for the life of
// the lease.
func TestAcquire_LateDuplicateWriteIsDeleted(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	direct := newClient(t, ep)
	a := newSem(t, newClient(t, ep), name, WithCapacity(1))
	log := &grantLog{}
	ctx := testCtx(t, 30*time.Second)
	u, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	key, lease := u.req().key, u.req().lease.id
	require.NoError(t, u.Release(ctx))
	// The same write again, as the late duplicate would make it.
	_, err = direct.Put(ctx, key, formatValue(1, time.Now(), "late"), clientv3.WithLease(lease))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return noQueueKeys(t, direct, name) }, 10*time.Second, 10*time.Millisecond, "the ghost is deleted")
	v, err := a.Acquire(ctx, 1)
	require.NoError(t, err, "nothing holds the units")
	log.add(v)
	require.NoError(t, v.Release(ctx))
	checkHistory(t, direct, name, log)
}
