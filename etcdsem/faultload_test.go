//go:build linux

package etcdsem

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/assert"
)

// A faultLoad runs callers until stopped, each looping acquire, hold,
// release, and checks the bound as the callers see it: a caller adds its
// units to its bound's counter when granted and takes them off before
// releasing, or as soon as Lost closes, so the counter is at least the units
// held by callers not told of a loss, and must never exceed the capacity.
// The fault tests of block mode and of Sets run one.
type faultLoad struct {
	t    *testing.T
	log  *grantLog
	hold time.Duration // the critical section
	stop chan struct{}
	wg   sync.WaitGroup

	grants atomic.Int64
	failed atomic.Int64 // acquires ended by a fault: ErrLost or a timeout
	lost   atomic.Int64 // holders told of a loss
}

// A loadBound is what one caller's units count against.
type loadBound struct {
	what     string
	capacity int64
	inUse    atomic.Int64
}

// A take acquires the units of a caller's r-th round with ctx, and returns
// them with their count and the bound they count against.
type take func(ctx context.Context, r int) (*Units, int64, *loadBound, error)

func newFaultLoad(t *testing.T, log *grantLog, hold time.Duration) *faultLoad {
	return &faultLoad{t: t, log: log, hold: hold, stop: make(chan struct{})}
}

// start runs one caller of take.
func (l *faultLoad) start(ctx context.Context, take take) {
	l.wg.Add(1)
	go l.caller(ctx, take)
}

func (l *faultLoad) caller(ctx context.Context, take take) {
	defer l.wg.Done()
	for r := 0; ; r++ {
		select {
		case <-l.stop:
			return
		default:
		}
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		u, n, b, err := take(actx, r)
		cancel()
		if err != nil {
			if !errors.Is(err, ErrLost) && !errors.Is(err, semaphore.ErrTimedOut) {
				assert.NoError(l.t, err)
				return
			}
			l.failed.Add(1)
			continue
		}
		l.log.add(u)
		if now := b.inUse.Add(n); now > b.capacity {
			l.t.Errorf("bound of %s: callers hold %d units, capacity %d", b.what, now, b.capacity)
		}
		select {
		case <-u.Lost():
			l.lost.Add(1)
		case <-time.After(l.hold):
		}
		b.inUse.Add(-n)
		l.grants.Add(1)
		releaseUntilDone(ctx, u)
	}
}

// releaseUntilDone releases u, again while etcd cannot be reached, until it
// is given back or lost, or ctx ends.
func releaseUntilDone(ctx context.Context, u *Units) {
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := u.Release(rctx)
		cancel()
		if err == nil || errors.Is(err, ErrLost) || ctx.Err() != nil {
			return
		}
	}
}

// progress waits until the load has made n more grants; if it has not
// within a minute, it logs state and fails the test.
func (l *faultLoad) progress(what string, n int64, state func() string) {
	l.t.Helper()
	from := l.grants.Load()
	if !assert.Eventually(l.t, func() bool { return l.grants.Load() >= from+n }, 60*time.Second, 10*time.Millisecond, "no progress %s", what) {
		l.t.Log(state())
		l.t.FailNow()
	}
}

// end stops the callers and waits for them.
func (l *faultLoad) end() {
	close(l.stop)
	l.wg.Wait()
	l.t.Logf("%d grants, %d acquires failed by faults, %d holders told of a loss", l.grants.Load(), l.failed.Load(), l.lost.Load())
}

// clusterFaults runs the member faults of a cluster under load, calling
// progress after each: the leader SIGKILLed, then restarted; the leader
// SIGSTOPped, then resumed; and, with follower, a follower SIGKILLed, then
// restarted.
func clusterFaults(t *testing.T, procs []*etcdProc, follower bool, progress func(what string)) {
	l := leader(t, procs)
	l.kill()
	progress("after killing the leader")
	l.start()
	waitHealthy(t, procs...)
	progress("after restarting the old leader")

	l = leader(t, procs)
	l.stop()
	progress("with the leader stopped")
	l.cont()
	progress("after the leader resumed")
	if !follower {
		return
	}

	l = leader(t, procs)
	var f *etcdProc
	for _, p := range procs {
		if p != l {
			f = p
			break
		}
	}
	f.kill()
	progress("after killing a follower")
	f.start()
	waitHealthy(t, procs...)
	progress("after restarting the follower")
}
