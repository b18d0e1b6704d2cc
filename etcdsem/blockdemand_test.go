package etcdsem

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// offlineSem returns a closed handle on a mirror the test writes, with no
// etcd: its block pool's manager runs its loop and makes no RPC.
func offlineSem(capacity int64) *Semaphore {
	s := &Semaphore{name: "offline", keyLayout: keysOf("offline"), cfg: config{ttl: 10e9}, mine: map[string]*request{}, closed: true}
	s.q.init(s)
	s.setCapacity(1, capacity)
	s.bgCtx, s.stopWatch = context.WithCancel(context.Background())
	return s
}

// setCapacity writes the capacity into the mirror at rev, as the watch does.
func (s *Semaphore) setCapacity(rev, c int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.q.put(&mvccpb.KeyValue{Key: []byte(s.capKey), Value: []byte(formatUnits(c)), ModRevision: rev})
	s.q.settle(rev)
}

// The manager looks again when the mirror moves while it is looking: a move
// between its reading of the mirror and its next wait (another handle's key
// arriving during its round trips to etcd) is not left for the idle tick.
func TestBlockManager_AMoveDuringAStepIsSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := offlineSem(4)
		p := newBlockPool(s, 2)
		defer func() {
			s.stopWatch()
			s.wg.Wait()
		}()
		synctest.Wait() // the manager waits

		// Stop the manager in a step, after its reading of the mirror.
		p.seen.Store(&seen{capacity: -1})
		p.mu.Lock()
		p.signal()
		for p.seen.Load().capacity == -1 {
			runtime.Gosched()
		}
		s.setCapacity(2, 8) // the mirror moves
		p.mu.Unlock()
		synctest.Wait() // the manager waits again; no time has passed

		assert.Equal(t, int64(8), p.seen.Load().capacity, "the manager saw the capacity the mirror moved to during its step")
	})
}

// A caller's view of the mirror, read before the manager's, may be published
// after it: the later revision's view stays, so a Break the manager saw is
// never undone by a caller's older view.
func TestBlockPool_AnOlderViewNeverReplacesANewer(t *testing.T) {
	p := &blockPool{}
	p.observe(fleetView{rev: 12, capacity: 4, broken: true, reason: "maintenance"})
	p.observe(fleetView{rev: 10, capacity: 8})
	v := p.seen.Load()
	require.NotNil(t, v.broken, "the break at revision 12 stays")
	assert.Equal(t, "maintenance", *v.broken)
	assert.Equal(t, int64(4), v.capacity)
	p.observe(fleetView{rev: 13, capacity: 6})
	assert.Nil(t, p.seen.Load().broken, "a later view is published: the repair")
	assert.Equal(t, int64(6), p.seen.Load().capacity)
}
