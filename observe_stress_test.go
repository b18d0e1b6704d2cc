package semaphore_test

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// Under a load of timeouts, cancellations and weights, with every observability
// option on: the observer hears about every queued call exactly once, with the
// same times Stats adds up; dumps taken meanwhile stay consistent; nothing leaks;
// and once everything is released the dump shows nothing held.
func TestStress_ObserverAndTrackingAgreeWithStats(t *testing.T) {
	rec := &recorder{}
	var leaked atomic.Int64
	s := semaphore.New(8, semaphore.WithName("stress"), semaphore.WithObserver(rec),
		semaphore.WithLeakDetection(func(r semaphore.LeakReport) { leaked.Add(r.Units) }),
		semaphore.WithWatchdog(time.Millisecond, time.Millisecond, discardLogger()))
	var dumps atomic.Int64
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	load(t, s, 16, rounds, func(n int64) {
		if dumps.Add(1)%16 == 0 {
			head := headline(s)
			assert.True(t, strings.HasPrefix(head, `semaphore "stress": `), head)
			assert.NotContains(t, head, "held by 0 holders")
		}
		runtime.Gosched()
	})
	for range 3 {
		runtime.GC()
	}

	st := s.Stats()
	var queued, waited int64
	for _, e := range rec.got() {
		if e.Queued {
			queued++
			waited += int64(e.Waited)
		} else {
			assert.Zero(t, e.Waited, "a refusal did not wait")
		}
	}
	assert.Equal(t, int64(st.Queued), queued, "one event per queued call")
	assert.Equal(t, int64(st.WaitTime), waited, "the observer sees the same clock reads as Stats")
	assert.Zero(t, leaked.Load(), "every Units was released")
	require.Equal(t, int64(8), s.Available())
	assert.Contains(t, headline(s), "no waiters, 8 of 8 available, 0 held")
}
