package semdebug

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRead_HeadWaitBoundGrowsWhileNoWaiterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o observation
		f := newFake("f", semaphore.Reading{Waiters: 2, Queued: 2})
		assert.Equal(t, time.Duration(0), o.read(f, false).HeadWait, "the first reading knows nothing yet")
		time.Sleep(3 * time.Second)
		f.set(func(s *semaphore.Reading) { s.Waiters, s.Queued = 3, 3 }) // one more joined; nobody left
		rd := o.read(f, false)
		assert.Equal(t, 3*time.Second, rd.HeadWait)
		assert.True(t, rd.HeadWaitBound)
		time.Sleep(2 * time.Second)
		assert.Equal(t, 5*time.Second, o.read(f, false).HeadWait)
	})
}

func TestRead_HeadWaitBoundRestartsWhenAWaiterLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o observation
		f := newFake("f", semaphore.Reading{Waiters: 2, Queued: 2})
		o.read(f, false)
		time.Sleep(3 * time.Second)
		// One left and one joined: same count, but the head may be another waiter.
		f.set(func(s *semaphore.Reading) { s.Queued = 3 })
		assert.Equal(t, time.Duration(0), o.read(f, false).HeadWait)
		time.Sleep(time.Second)
		assert.Equal(t, time.Second, o.read(f, false).HeadWait)
		f.set(func(s *semaphore.Reading) { s.Waiters = 0 })
		rd := o.read(f, false)
		assert.Equal(t, time.Duration(0), rd.HeadWait, "nobody waits")
		assert.False(t, rd.HeadWaitBound)
	})
}

// Without Queued the page cannot tell whether the head it saw is still the
// head, so it derives no bound, and shows the wait as unknown.
func TestRead_NoHeadWaitBoundWithoutQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o observation
		f := newFake("f", semaphore.Reading{Waiters: 2, Unknown: semaphore.QueuedField})
		o.read(f, false)
		time.Sleep(3 * time.Second)
		rd := o.read(f, false)
		assert.Equal(t, time.Duration(0), rd.HeadWait)
		assert.False(t, rd.HeadWaitBound)
		assert.Equal(t, "-", rd.HeadWaitText())
	})
}

func TestRead_BrokenObjectHasNoHeadWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o observation
		f := newFake("f", semaphore.Reading{Waiters: 1, Queued: 1})
		o.read(f, false)
		time.Sleep(time.Second)
		f.set(func(s *semaphore.Reading) { s.Broken = true })
		assert.Equal(t, time.Duration(0), o.read(f, false).HeadWait)
	})
}

func TestRead_SourceHeadWaitWinsWhenLarger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o observation
		f := newFake("f", semaphore.Reading{Waiters: 1, Queued: 1, HeadWait: time.Minute})
		rd := o.read(f, false)
		assert.Equal(t, time.Minute, rd.HeadWait)
		assert.False(t, rd.HeadWaitBound, "the source's own value is exact")
	})
}

func TestRead_RatesAreSinceThePreviousReadingASecondOrMoreAgo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o observation
		f := newFake("f", semaphore.Reading{Acquired: 10})
		assert.False(t, o.read(f, false).Rates.Known, "one reading gives no rate")
		time.Sleep(2 * time.Second)
		f.set(func(s *semaphore.Reading) { s.Acquired, s.TimedOut, s.Shed = 30, 4, 1 })
		assert.Equal(t, rates{Known: true, Acquired: 10, TimedOut: 2, Shed: 0.5}, o.read(f, false).Rates)

		time.Sleep(100 * time.Millisecond)
		f.set(func(s *semaphore.Reading) { s.Acquired = 1030 })
		assert.Equal(t, rates{Known: true, Acquired: 10, TimedOut: 2, Shed: 0.5}, o.read(f, false).Rates,
			"a reading less than a second later keeps the last rates")
		time.Sleep(900 * time.Millisecond)
		assert.Equal(t, 1000.0, o.read(f, false).Rates.Acquired)
	})
}

func TestRead_CountersGoingBackGiveZeroRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o observation
		f := newFake("f", semaphore.Reading{Acquired: 10})
		o.read(f, false)
		time.Sleep(time.Second)
		f.set(func(s *semaphore.Reading) { s.Acquired = 5 })
		assert.Equal(t, 0.0, o.read(f, false).Rates.Acquired)
	})
}

func TestRead_OnlySamplingReadingsEnterTheHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o observation
		f := newFake("f", semaphore.Reading{Held: 3, Waiters: 1, Queued: 1})
		o.read(f, false)
		require.Empty(t, o.historyPoints())
		time.Sleep(time.Second)
		o.read(f, true)
		assert.Equal(t, []point{{At: time.Now(), Held: 3, Waiters: 1, HeadWait: time.Second}}, o.historyPoints())
	})
}

func TestRing_KeepsTheLastHistoryLenPointsOldestFirst(t *testing.T) {
	var o observation
	for i := range historyLen + 7 {
		o.history.add(point{Held: int64(i)})
	}
	pts := o.historyPoints()
	require.Len(t, pts, historyLen)
	assert.Equal(t, int64(7), pts[0].Held)
	assert.Equal(t, int64(historyLen+6), pts[historyLen-1].Held)
}
