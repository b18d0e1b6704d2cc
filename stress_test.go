package semaphore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// load runs goroutines that acquire random weights in every way the package offers,
// hold them briefly, and release them. It returns how many acquisitions succeeded.
// onHold runs while n units are held.
func load(t *testing.T, s *semaphore.Semaphore, goroutines, rounds int, onHold func(n int64)) (succeeded int64) {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for range rounds {
				n := rng.Int64N(4) + 1
				var err error
				var u *semaphore.Units
				switch rng.IntN(6) {
				case 0:
					err = s.Acquire(context.Background(), n)
				case 1:
					err = s.AcquireTimeout(time.Duration(rng.IntN(300))*time.Microsecond, n)
				case 2:
					ctx, cancel := context.WithCancel(context.Background())
					timer := time.AfterFunc(time.Duration(rng.IntN(300))*time.Microsecond, cancel)
					err = s.Acquire(ctx, n)
					timer.Stop()
					cancel()
				case 3:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(300))*time.Microsecond)
					u, err = s.AcquireUnits(ctx, n)
					cancel()
				case 4:
					if !s.TryAcquire(n) {
						err = semaphore.ErrTimedOut
					}
				case 5:
					err = semaphore.WithSemaphore(context.Background(), s, n, func(context.Context) error {
						onHold(n)
						return errHeld
					})
					if errors.Is(err, errHeld) {
						ok.Add(1)
					}
					continue
				}
				if err != nil {
					require.True(t, errors.Is(err, semaphore.ErrTimedOut) || errors.Is(err, context.Canceled) ||
						errors.Is(err, semaphore.ErrBroken) || errors.Is(err, semaphore.ErrTooLarge),
						"unexpected error: %v", err)
					continue
				}
				ok.Add(1)
				onHold(n)
				if u != nil {
					if rng.IntN(2) == 0 {
						_ = u.Return(1)
					}
					u.Release()
				} else {
					s.Release(n)
				}
			}
		})
	}
	wg.Wait()
	return ok.Load()
}

var errHeld = errors.New("held")

func TestStress_CapacityNeverExceededAndEverythingDrains(t *testing.T) {
	const capacity = 8
	s := semaphore.New(capacity)
	var inUse, peak atomic.Int64
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	succeeded := load(t, s, 32, rounds, func(n int64) {
		now := inUse.Add(n)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		runtime.Gosched()
		inUse.Add(-n)
	})
	assert.LessOrEqual(t, peak.Load(), int64(capacity), "capacity exceeded")
	assert.Equal(t, int64(capacity), s.Available(), "every unit came back")
	assert.Equal(t, 0, s.Waiters())
	st := s.Stats()
	assert.Equal(t, uint64(succeeded), st.Acquired, "every success counted once")
	assert.Positive(t, st.TimedOut+st.Cancelled, "the load should include waits that gave up")
	assert.Positive(t, st.Queued)
}

func TestStress_ResizeUnderLoadKeepsUnitsWhole(t *testing.T) {
	s := semaphore.New(8)
	var inUse, peak atomic.Int64
	stop := make(chan struct{})
	resizer := make(chan struct{})
	go func() {
		defer close(resizer)
		for i := 0; ; i++ {
			select {
			case <-stop:
				s.Resize(8)
				return
			default:
				s.Resize(int64(4 + i%5)) // 4..8
				runtime.Gosched()
			}
		}
	}()
	load(t, s, 16, 200, func(n int64) {
		now := inUse.Add(n)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		runtime.Gosched()
		inUse.Add(-n)
	})
	close(stop)
	<-resizer
	assert.LessOrEqual(t, peak.Load(), int64(8), "never more held than the largest capacity")
	assert.Equal(t, int64(8), s.Available(), "every unit came back across resizes")
	assert.Equal(t, 0, s.Waiters())
}

func TestStress_BreakUnderLoadFailsEveryoneAndStrandsNobody(t *testing.T) {
	s := semaphore.New(4)
	cause := errors.New("shutdown")
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Go(func() {
		<-started
		for s.Waiters() < 8 {
			runtime.Gosched()
		}
		s.Break(cause)
	})
	close(started)
	load(t, s, 24, 300, func(int64) { runtime.Gosched() })
	wg.Wait()
	require.ErrorIs(t, s.Err(), cause)
	assert.Equal(t, 0, s.Waiters())
	assert.ErrorIs(t, s.Acquire(context.Background(), 1), cause)
}

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

// Pairs of goroutines race a cancellation against the Release that grants the
// cancelled call, with holder tracking and an observer, while others resize:
// every call that returned nil is counted in Acquired and no other is, the
// observer's events agree with Stats outcome by outcome (a grant given back is
// one Cancelled event, not a Granted one), and every unit comes back.
func TestStress_GrantsRacingCancellationsKeepCountsAndUnitsExact(t *testing.T) {
	rec := &recorder{}
	s := semaphore.New(2, semaphore.WithObserver(rec), semaphore.WithHolderTracking())
	rounds := 2000
	if testing.Short() || raceEnabled {
		rounds = 300
	}
	var succeeded, failed, tried atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			for range rounds {
				ctx, cancel := context.WithCancel(context.Background())
				n := rng.Int64N(2) + 1
				held := s.TryAcquire(1)
				if held {
					tried.Add(1)
				}
				yields := rng.IntN(3)
				go func() {
					for range yields {
						runtime.Gosched()
					}
					cancel()
				}()
				if held {
					s.Release(1) // races the cancellation to grant a waiter
				}
				var err error
				if rng.IntN(2) == 0 {
					var u *semaphore.Units
					if u, err = s.AcquireUnits(ctx, n); err == nil {
						u.Release()
					}
				} else {
					err = semaphore.WithSemaphore(ctx, s, n, func(context.Context) error { return nil })
				}
				cancel()
				if err != nil {
					require.ErrorIs(t, err, context.Canceled)
					failed.Add(1)
				} else {
					succeeded.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range rounds {
			s.Resize(int64(2 + i%2))
			runtime.Gosched()
		}
		s.Resize(2)
	})
	wg.Wait()

	st := s.Stats()
	events := map[semaphore.Outcome]uint64{}
	for _, e := range rec.got() {
		events[e.Outcome]++
	}
	assert.Equal(t, st.Acquired-st.AcquiredImmediately, events[semaphore.Granted], "one Granted event per grant kept after waiting")
	assert.Equal(t, st.Cancelled, events[semaphore.Cancelled], "one Cancelled event per cancelled call")
	assert.Equal(t, uint64(failed.Load()), st.Cancelled, "every failed call counted once, as Cancelled")
	assert.Equal(t, uint64(succeeded.Load()+tried.Load()), st.Acquired, "every call that returned nil or true counted once")
	assert.Equal(t, int64(2), s.Available(), "every unit came back")
	assert.Equal(t, 0, s.Waiters())
	assert.Contains(t, headline(s), "no waiters, 2 of 2 available, 0 held")
}
