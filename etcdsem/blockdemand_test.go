package etcdsem

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// offlineHandle returns a handle on no etcd, its mirror at revision 1 with
// the given capacity. Its session makes no RPC: it is closed to leases,
// deletions and goroutines, but its context lives until the test calls
// sess.stop, so that a manager the test runs loops.
func offlineHandle(capacity int64) *handle {
	sess := &session{onLost: func(*lease) {}, ttl: 10 * time.Second}
	sess.ctx, sess.stop = context.WithCancel(context.Background())
	sess.closed.Store(true)
	h := newHandle(sess, "offline", "offline")
	h.setCapacity(1, capacity)
	return h
}

// setCapacity writes the capacity into the mirror at rev, as the watch does.
func (h *handle) setCapacity(rev, c int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.q.put(&mvccpb.KeyValue{Key: []byte(h.capKey), Value: []byte(formatUnits(c)), ModRevision: rev})
	h.q.settle(rev)
}

// runManager runs p's manager until stop, which waits for it.
func runManager(p *blockPool) (stop func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		newBlockManager(p).run()
	}()
	return func() {
		p.h.sess.stop()
		wg.Wait()
	}
}

// The manager looks again when the mirror moves while it is looking: a move
// between its reading of the mirror and its next wait (another handle's key
// arriving during its round trips to etcd) is not left for the idle tick.
func TestBlockManager_AMoveDuringAStepIsSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := offlineHandle(4)
		p := newBlockPool(h, 2)
		defer runManager(p)()
		synctest.Wait() // the manager waits

		// Stop the manager in a step, after its reading of the mirror: it
		// reads the callers' demand next.
		p.seen.Store(&seen{capacity: -1})
		p.waiting.mu.Lock()
		p.signal()
		for p.seen.Load().capacity == -1 {
			runtime.Gosched()
		}
		h.setCapacity(2, 8) // the mirror moves
		p.waiting.mu.Unlock()
		synctest.Wait() // the manager waits again; no time has passed

		assert.Equal(t, int64(8), p.seen.Load().capacity, "the manager saw the capacity the mirror moved to during its step")
		assert.Equal(t, int64(8), p.ep.Load().local.Capacity(), "and applied it to the callers' semaphore")
	})
}

// A caller's view of the mirror, read before the manager's, may be applied
// after it: the later revision's view stays, so a Break the manager saw is
// never undone by a caller's older view.
func TestBlockPool_AnOlderViewNeverReplacesANewer(t *testing.T) {
	p := testPool(8)
	defer p.h.sess.stop()
	p.apply(fleetView{rev: 12, capacity: 4, broken: true, reason: "maintenance"})
	p.apply(fleetView{rev: 10, capacity: 8})
	v := p.seen.Load()
	require.NotNil(t, v.broken, "the break at revision 12 stays")
	assert.Equal(t, "maintenance", *v.broken)
	assert.Equal(t, int64(4), v.capacity)
	assert.Error(t, p.ep.Load().local.Err(), "the epoch grants nobody while broken")
	p.apply(fleetView{rev: 13, capacity: 6})
	assert.Nil(t, p.seen.Load().broken, "a later view is applied: the repair")
	assert.Equal(t, int64(6), p.seen.Load().capacity)
	assert.NoError(t, p.ep.Load().local.Err(), "the repair starts an epoch that grants")
	assert.Equal(t, int64(6), p.ep.Load().local.Capacity())
}
