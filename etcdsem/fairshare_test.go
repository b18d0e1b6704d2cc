package etcdsem

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A shareLoad is one handle's callers: goroutines that each loop Acquire(1),
// a short hold, Release, until stopped.
type shareLoad struct {
	t      *testing.T
	s      *Semaphore
	name   string
	grants atomic.Int64 // grants made, by every goroutine
	mu     sync.Mutex
	stops  []context.CancelFunc // guarded by mu: one per goroutine running
	wg     sync.WaitGroup
}

// shareHold is how long a caller of a shareLoad holds its unit.
const shareHold = time.Millisecond

func newShareLoad(t *testing.T, s *Semaphore) *shareLoad {
	l := &shareLoad{t: t, s: s, name: s.clientTag}
	t.Cleanup(l.stop)
	return l
}

// start starts n more goroutines.
func (l *shareLoad) start(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		ctx, cancel := context.WithCancel(context.Background())
		l.stops = append(l.stops, cancel)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				u, err := l.s.Acquire(ctx, 1)
				if err != nil {
					assert.True(l.t, errors.Is(err, context.Canceled), "%s: Acquire: %v", l.name, err)
					return
				}
				l.grants.Add(1)
				time.Sleep(shareHold) // the caller's work
				assert.NoError(l.t, u.Release(context.Background()), "%s: Release", l.name)
			}
		}()
	}
}

// stop stops every goroutine and waits for them.
func (l *shareLoad) stop() {
	l.mu.Lock()
	for _, cancel := range l.stops {
		cancel()
	}
	l.stops = nil
	l.mu.Unlock()
	l.wg.Wait()
}

// shareSample is the units each handle's blocks weigh in etcd, by client name,
// and the units held in all, as one Stats call saw them.
type shareSample struct {
	units map[string]int64
	held  int64
}

func sampleShares(t *testing.T, s *Semaphore) shareSample {
	t.Helper()
	st, err := s.Stats(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	out := shareSample{units: map[string]int64{}, held: st.Held}
	for _, e := range st.Holders {
		out.units[e.Client] += e.Units
	}
	return out
}

// near reports whether every handle holds its share within one unit.
func (sm shareSample) near(shares map[string]int64) bool {
	for name, want := range shares {
		if d := sm.units[name] - want; d < -1 || d > 1 {
			return false
		}
	}
	return true
}

// shareSamples is how many samples a split is judged on, and shareNear the
// least fraction of them in which every handle must hold its max-min share
// within one unit. The units move while callers come and go: a unit a handle
// gives back is one RPC in flight before the other's block weighs it, and a
// handle below its share asks for one block at a time, so a sample can catch
// one handle a unit or a block short, or the weight of a block not yet
// lowered. Those moments last a round trip or two out of every sample's
// interval; a split that does not converge fails most samples, not a few.
const (
	shareSamples = 40
	shareNear    = 0.75
)

// requireSplit waits until the handles hold their max-min shares within one
// unit, then samples the split shareSamples times and requires it near the
// shares in at least shareNear of them, the capacity never exceeded, and
// every handle granting its callers all along. The deadline is generous: a
// handle whose callers stop gives its units back only once they are found
// free at two checks a second apart (nobody else waits in etcd: the others
// hold their shares), and the machine may be loaded.
func requireSplit(t *testing.T, probe *Semaphore, capacity int64, shares map[string]int64, loads ...*shareLoad) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for sm := sampleShares(t, probe); !sm.near(shares); sm = sampleShares(t, probe) {
		if time.Now().After(deadline) {
			for _, l := range loads {
				t.Logf("%s:\n%s", l.name, l.s.pool.debugState())
			}
			require.FailNow(t, "the split does not converge", "want %v, last seen %v", shares, sm.units)
		}
		<-tick.C
	}
	converged := time.Since(start)
	before := make([]int64, len(loads))
	for i, l := range loads {
		before[i] = l.grants.Load()
	}
	near := 0
	seen := map[string][]int64{}
	for range shareSamples {
		<-tick.C
		sm := sampleShares(t, probe)
		require.LessOrEqual(t, sm.held, capacity, "the blocks fit the capacity: %v", sm.units)
		if sm.near(shares) {
			near++
		}
		for name := range shares {
			seen[name] = append(seen[name], sm.units[name])
		}
	}
	t.Logf("shares %v: converged in %v, then %d of %d samples within a unit; units seen %v",
		shares, converged.Round(time.Millisecond), near, shareSamples, seen)
	assert.GreaterOrEqual(t, float64(near), shareNear*shareSamples, "samples near the max-min split %v: units seen %v", shares, seen)
	for i, l := range loads {
		assert.Greater(t, l.grants.Load(), before[i], "%s's callers are granted while the split holds", l.name)
	}
}

// Three processes with demands 2, 16 and 16 on capacity 12 converge to the
// max-min shares 2, 5 and 5; a process whose demand grows past its share then
// gets its share; when another stops, the two left take its units.
func TestBlocks_UnitsConvergeToTheMaxMinShareAndFollowTheDemand(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	checkHistoryAtEnd(t, ep, name, &grantLog{})
	const capacity = 12
	a := newSem(t, newClient(t, ep), name, WithCapacity(capacity), WithBlocks(2), WithClientName("a"))
	b := newSem(t, newClient(t, ep), name, WithBlocks(2), WithClientName("b"))
	c := newSem(t, newClient(t, ep), name, WithBlocks(2), WithClientName("c"))
	la, lb, lc := newShareLoad(t, a), newShareLoad(t, b), newShareLoad(t, c)
	la.start(2)
	lb.start(16)
	lc.start(16)
	requireSplit(t, a, capacity, map[string]int64{"a": 2, "b": 5, "c": 5}, la, lb, lc)

	la.start(14)
	requireSplit(t, a, capacity, map[string]int64{"a": 4, "b": 4, "c": 4}, la, lb, lc)

	lb.stop()
	requireSplit(t, a, capacity, map[string]int64{"a": 6, "b": 0, "c": 6}, la, lc)
}
