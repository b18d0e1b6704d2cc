package admission_test

import (
	"bytes"
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
)

// untilExpiryWaitsForTheLock returns once a TTL callback is on some goroutine's
// stack. The caller holds the controller's lock, so the callback cannot get past
// it.
func untilExpiryWaitsForTheLock() {
	buf := make([]byte, 1<<16)
	for {
		runtime.Gosched() // with GOMAXPROCS=1, lets the timer's goroutine start
		if bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("admission.(*Controller).expire(")) {
			return
		}
	}
}

// countingCloser counts how many times a parked value was closed.
type countingCloser struct{ closes atomic.Int32 }

func (c *countingCloser) Close() error { c.closes.Add(1); return nil }

// A TTL timer that has fired may run its callback after Resume or Release took
// the permit off the inactive list (timer.Stop no longer stops it). The callback
// must then do nothing. Each round parks with a 1ns TTL, holds the controller's
// lock (in EvictWhere's match, which runs under it and is called only while the
// permit is still parked) until the fired callback waits for that lock, then
// calls Resume or Release, which usually takes the lock before the callback does.
// A resumed permit is never evicted (its value stays open, OnEvict is not called,
// and once released it stays Released), and a value is closed at most once.
func TestParkWithTTL_AResumedPermitIsNeverEvictedAndItsValueIsClosedAtMostOnce(t *testing.T) {
	const rounds = 300
	c := admission.New(limits(1, 100), admission.WithName("ttl"))
	type round struct {
		p       *admission.Permit
		pk      *admission.Parked
		value   *countingCloser
		evicted atomic.Int32 // OnEvict calls
		resumed bool         // Resume returned the value
	}
	rs := make([]*round, rounds)
	for i := range rs {
		r := &round{value: &countingCloser{}}
		rs[i] = r
		p, err := c.Acquire(context.Background(), "scan", 10)
		require.NoError(t, err)
		r.p = p
		r.pk = park(t, c, p, r.value, admission.WithTTL(time.Nanosecond),
			admission.OnEvict(func(admission.EvictReason) { r.evicted.Add(1) }))
		c.EvictWhere(func(string) bool {
			untilExpiryWaitsForTheLock()
			return false
		})
		if i%2 == 0 {
			_, r.resumed = r.pk.Resume()
		}
		p.Release()
	}
	// A callback that fired late has had the rest of the rounds to run; the
	// last rounds' are checked too, whenever they run, by the checks below.
	resumed, evictedByTTL := 0, 0
	for i, r := range rs {
		assert.LessOrEqual(t, r.value.closes.Load(), int32(1), "round %d: value closed more than once", i)
		assert.Equal(t, admission.Released, r.p.State(), "round %d: a released permit stays released", i)
		if r.resumed {
			resumed++
			assert.Zero(t, r.value.closes.Load(), "round %d: the resumed value was closed", i)
			assert.Zero(t, r.evicted.Load(), "round %d: the resumed permit was evicted", i)
			assert.False(t, r.pk.Evicted(), "round %d: the resumed permit reports evicted", i)
		} else if r.pk.Evicted() {
			evictedByTTL++
		}
	}
	st := c.Stats()
	assert.Equal(t, uint64(evictedByTTL), st.TimeEvictions, "TTL evictions are exactly the parked permits the TTL took")
	assert.Zero(t, st.CurrentPermits)
	assert.Equal(t, admission.Resources{}, st.Held)
	t.Logf("%d resumed, %d evicted by their TTL first", resumed, evictedByTTL)
}
