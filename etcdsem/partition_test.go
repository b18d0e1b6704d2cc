package etcdsem

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The headline guarantee: a holder cut off from etcd is told it lost its units
// (Lost closes) strictly before anyone else can be granted them: before the
// server deletes its key, which every other grant waits for.
func TestPartition_LostClosesBeforeTheNextGrant(t *testing.T) {
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
		wch := obs.Watch(wctx, name+"/q/", clientv3.WithPrefix(), clientv3.WithRev(h.Token()+1))
		deleted := make(chan time.Time, 1)
		go func() {
			for resp := range wch {
				for _, ev := range resp.Events {
					if ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > h.Token() && strings.HasSuffix(string(ev.Kv.Key), h.r.key[strings.LastIndex(h.r.key, "/"):]) {
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

		px.hold(true, true)
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
