//go:build linux

package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServer_SIGKILLAndRestartKeepsHoldersAndPlaces(t *testing.T) {
	fulltest.Fault(t)
	p := newCluster(t, 1)[0]
	p.start()
	waitHealthy(t, p)
	name := "sem"
	a := newSem(t, processClient(t, p.client), name, WithCapacity(1))
	b := newSem(t, processClient(t, p.client), name)
	c := newSem(t, processClient(t, p.client), name)
	log := &grantLog{}
	ctx := testCtx(t, 2*time.Minute)
	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	bGot, cGot := make(chan *Units, 1), make(chan *Units, 1)
	go func() {
		u, err := b.Acquire(ctx, 1)
		assert.NoError(t, err)
		bGot <- u
	}()
	waitWaiters(t, a, 1)
	go func() {
		u, err := c.Acquire(ctx, 1)
		assert.NoError(t, err)
		cGot <- u
	}()
	waitWaiters(t, a, 2)

	p.kill()
	p.start()
	waitHealthy(t, p)
	select {
	case <-h.Lost():
		t.Fatalf("the holder lost its units across a restart: %v", h.Err())
	default:
	}
	require.Eventually(t, func() bool { return h.Release(ctx) == nil }, 30*time.Second, 50*time.Millisecond)
	ub := <-bGot
	log.add(ub)
	select {
	case <-cGot:
		t.Fatal("the second waiter was granted ahead of the first after the restart")
	default:
	}
	require.Eventually(t, func() bool { return ub.Release(ctx) == nil }, 30*time.Second, 50*time.Millisecond)
	uc := <-cGot
	log.add(uc)
	require.NoError(t, uc.Release(ctx))
	checkHistory(t, a.sess.cli, name, log)
}

func TestServer_SIGSTOPPastTTLTellsHoldersWhileStopped(t *testing.T) {
	fulltest.Fault(t)
	p := newCluster(t, 1)[0]
	p.start()
	waitHealthy(t, p)
	name := "sem"
	ttl := WithTTL(2 * time.Second)
	a := newSem(t, processClient(t, p.client), name, WithCapacity(1), ttl)
	b := newSem(t, processClient(t, p.client), name, ttl)
	log := &grantLog{}
	ctx := testCtx(t, 2*time.Minute)
	h, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(h)
	bErr := make(chan error, 1)
	go func() {
		u, err := b.Acquire(ctx, 1)
		if err == nil {
			log.add(u)
		}
		bErr <- err
	}()
	waitWaiters(t, a, 1)

	p.stop()
	stopped := time.Now()
	<-h.Lost()
	t.Logf("holder told %v after the server stopped", time.Since(stopped).Round(time.Millisecond))
	assert.ErrorIs(t, h.Err(), ErrLost)
	err = <-bErr
	assert.ErrorIs(t, err, ErrLost, "the waiter's lease ran out too")
	p.cont()

	// Progress resumes once the expired leases are revoked.
	u, err := b.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	require.NoError(t, u.Release(ctx))
	checkHistory(t, a.sess.cli, name, log)
}

func TestCluster_LeaderKillAndStopKeepCheckerCleanAndProgress(t *testing.T) {
	fulltest.Fault(t)
	procs := newCluster(t, 3)
	for _, p := range procs {
		p.start()
	}
	waitHealthy(t, procs...)
	eps := []string{procs[0].client, procs[1].client, procs[2].client}
	name := "sem"
	log := &grantLog{}
	sems := make([]*Semaphore, 3)
	for i := range sems {
		sems[i] = newSem(t, processClient(t, eps...), name, WithCapacity(3), WithClientName(fmt.Sprintf("h%d", i)))
	}
	ctx := testCtx(t, 4*time.Minute)
	stop := make(chan struct{})
	var grants, lost atomic.Int64
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := sems[i%3]
			for r := 0; ; r++ {
				select {
				case <-stop:
					return
				default:
				}
				actx, cancel := context.WithTimeout(ctx, 30*time.Second)
				u, err := s.Acquire(actx, int64(1+(i+r)%3))
				cancel()
				if err != nil {
					if errors.Is(err, ErrLost) || errors.Is(err, semaphore.ErrTimedOut) {
						lost.Add(1)
						continue
					}
					assert.NoError(t, err)
					return
				}
				log.add(u)
				grants.Add(1)
				releaseUntilDone(ctx, u)
			}
		}()
	}
	progress := func(what string) {
		t.Helper()
		from := grants.Load()
		if !assert.Eventually(t, func() bool { return grants.Load() >= from+20 }, 60*time.Second, 20*time.Millisecond, "no progress %s", what) {
			for _, s := range sems {
				t.Log(s.debugState())
			}
			t.FailNow()
		}
	}
	progress("at the start")

	clusterFaults(t, procs, false, progress)

	close(stop)
	wg.Wait()
	t.Logf("%d grants, %d acquires failed by faults", grants.Load(), lost.Load())
	n := checkHistory(t, sems[0].sess.cli, name, log)
	assert.GreaterOrEqual(t, n, int(grants.Load()))
}

// An acquire in flight when its server stops past the lease's TTL ends with
// ErrLost as soon as the lease is lost (TTL minus the margin after the last
// renewal), while the server is still stopped; it never retries its
// transaction on a lease the server, once it resumes, no longer knows.
func TestServer_SIGSTOPPastTTLEndsAnAcquireInFlight(t *testing.T) {
	fulltest.Fault(t)
	p := newCluster(t, 1)[0]
	p.start()
	waitHealthy(t, p)
	s := newSem(t, processClient(t, p.client), "sem", WithCapacity(1), WithTTL(2*time.Second))
	ctx := testCtx(t, 2*time.Minute)
	warmUp(t, ctx, s, &grantLog{}) // the lease exists: Acquire goes straight to its transaction

	p.stop()
	stopped := time.Now()
	acquired := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, 1)
		acquired <- err
	}()
	var err error
	select {
	case err = <-acquired:
		t.Logf("the acquire ended %v after the server stopped (TTL 2s)", time.Since(stopped).Round(time.Millisecond))
		p.cont()
	case <-time.After(3 * 2 * time.Second):
		t.Error("the acquire still waits 3 TTLs after the server stopped")
		p.cont() // the server forgets the lease when it resumes
		select {
		case err = <-acquired:
		case <-time.After(20 * time.Second):
			t.Fatal("the acquire still retries 20s after the server resumed")
		}
	}
	assert.ErrorIs(t, err, ErrLost)
	assert.NoError(t, ctx.Err(), "ended by the loss, not by the context")
	_, ok := semaphore.OutcomeOf(err)
	assert.False(t, ok, "a lost lease is no outcome of the semaphore")
}
