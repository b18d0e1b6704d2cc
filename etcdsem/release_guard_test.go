package etcdsem

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Release deletes the key only if its create revision is still the token: a
// delete that arrives after the key was replaced by a newer one of the same
// name and lease (a retried delete, from the server's point of view) leaves
// the newer key alone.
func TestRelease_NeverDeletesANewerKeyOfTheSameName(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	direct := newClient(t, ep)
	px := newProxy(t, ep)
	b := newSem(t, newClient(t, px.endpoint()), name, WithCapacity(1))
	t.Cleanup(px.release) // before b's Close, which needs the server's replies
	ctx := testCtx(t, 30*time.Second)

	u, err := b.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	key := u.req().key
	old, err := direct.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, old.Kvs, 1)

	// Keep the server's replies and events from b, so that its Release
	// reaches the server while b still believes the old key is there.
	px.hold(false, true)
	_, err = direct.Delete(ctx, key)
	require.NoError(t, err)
	put, err := direct.Put(ctx, key, string(old.Kvs[0].Value), clientv3.WithLease(clientv3.LeaseID(old.Kvs[0].Lease)))
	require.NoError(t, err)
	newer := put.Header.Revision

	before := txnsHandled(t)
	released := make(chan error, 1)
	go func() { released <- u.Release(ctx) }()
	require.Eventually(t, func() bool { return txnsHandled(t) > before }, 10*time.Second, 10*time.Millisecond,
		"the server handled the Release")
	cur, err := direct.Get(ctx, key)
	require.NoError(t, err)
	if assert.Len(t, cur.Kvs, 1, "the newer key survived the Release") {
		assert.Equal(t, newer, cur.Kvs[0].CreateRevision)
	}

	px.release()
	// Whether the handle reports the loss depends on whether its watch saw the
	// deletion before the reply: either way it must not be an RPC error.
	if err := <-released; err != nil {
		assert.ErrorIs(t, err, ErrLost)
	}
	_, err = direct.Delete(ctx, key)
	require.NoError(t, err)
}

// txnsHandled returns the Txn RPCs the embedded server has finished.
func txnsHandled(t testing.TB) int64 {
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "grpc_server_handled_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "grpc_method" && l.GetValue() == "Txn" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return int64(n)
}
