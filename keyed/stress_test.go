package keyed_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

// TestStress_LimitsHoldAndEverythingComesBack runs goroutines that acquire units
// of many keys of different capacities under a global limit, with Acquire
// (some contexts cancelled, some with deadlines), AcquireTimeout and TryAcquire,
// weights from 0 to one more than the key's capacity, and checks while they run
// that no key and not the global semaphore ever has more units out than its
// capacity, and at the end that every unit came back and no key is left.
func TestStress_LimitsHoldAndEverythingComesBack(t *testing.T) {
	stress(t, false, false)
}

// TestStress_FairLimitHoldsAndEverythingComesBack runs the same load against a
// set with a limit of its own, with weights and guarantees, while one worker
// resizes the limit, and checks the same: the units out never exceed the
// largest limit, and everything comes back.
func TestStress_FairLimitHoldsAndEverythingComesBack(t *testing.T) {
	stress(t, false, true)
}

// TestStress_BreakWhileBusyAtTheFairLimit is the Break test with a limit.
func TestStress_BreakWhileBusyAtTheFairLimit(t *testing.T) {
	stress(t, true, true)
}

// TestStress_BreakWhileBusyFailsEveryoneAndDrains breaks the set while the same
// load runs: every call ends, holders give their units back, Drain returns, and
// no key is left.
func TestStress_BreakWhileBusyFailsEveryoneAndDrains(t *testing.T) {
	stress(t, true, false)
}

func stress(t *testing.T, breakIt, limited bool) {
	const (
		keys    = 40
		workers = 8
		gCap    = 12
	)
	ops := 1500
	if testing.Short() || raceEnabled {
		ops = 400
	}
	capOf := func(k string) int64 { i, _ := strconv.Atoi(k); return int64(i%4) + 1 }
	g := semaphore.New(gCap, semaphore.WithName("all"))
	opts := []keyed.Option{keyed.WithName("stress"), keyed.WithCapacityFunc(capOf), keyed.WithMaxWaiters(6)}
	if limited {
		opts = append(opts, keyed.WithLimit(gCap),
			keyed.WithWeightFunc(func(k string) int64 { i, _ := strconv.Atoi(k); return int64(i%5) + 1 }),
			keyed.WithGuaranteeFunc(func(k string) int64 { i, _ := strconv.Atoi(k); return int64(i % 2) }))
	} else {
		opts = append(opts, keyed.WithGlobal(g))
	}
	s := keyed.New(0, opts...)

	var out [keys]atomic.Int64 // units each key's holders hold, by the test's count
	var global atomic.Int64
	var violations atomic.Int64
	var granted atomic.Int64
	cause := errors.New("stress break")
	errTry := errors.New("TryAcquire failed")
	holdersDone := make(chan struct{})

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range ops {
				if breakIt && w == 0 && i == ops/2 {
					s.Break(cause)
				}
				if limited && w == 1 && i%50 == 0 {
					s.Resize(gCap - int64(r.IntN(5))) // the units out stay within gCap
				}
				k := r.IntN(keys)
				key := strconv.Itoa(k)
				n := r.Int64N(capOf(key) + 2)
				var u *keyed.Units
				var err error
				switch r.IntN(5) {
				case 0:
					var ok bool
					if u, ok = s.TryAcquire(key, n); !ok {
						err = errTry
					}
				case 1:
					u, err = s.AcquireTimeout(time.Duration(r.IntN(200))*time.Microsecond, key, n)
				case 2:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(300))*time.Microsecond)
					u, err = s.Acquire(ctx, key, n)
					cancel()
				case 3:
					ctx, cancel := context.WithCancel(context.Background())
					yields := r.IntN(3)
					go func() {
						for range yields {
							runtime.Gosched()
						}
						cancel()
					}()
					u, err = s.Acquire(ctx, key, n)
					cancel()
				default:
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
					u, err = s.Acquire(ctx, key, n)
					cancel()
				}
				if err != nil {
					require.Nil(t, u)
					known := err == errTry || errors.Is(err, semaphore.ErrTimedOut) || errors.Is(err, context.Canceled) ||
						errors.Is(err, semaphore.ErrQueueFull) || errors.Is(err, semaphore.ErrTooLarge) || errors.Is(err, cause)
					assert.True(t, known, err)
					if n > capOf(key) && !breakIt && err != errTry && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
						assert.ErrorIs(t, err, semaphore.ErrTooLarge)
					}
					continue
				}
				granted.Add(1)
				if u.Key() != key || s.KeyStats(key).Capacity != capOf(key) {
					violations.Add(1) // a reused entry kept another key's capacity
				}
				if out[k].Add(n) > capOf(key) {
					violations.Add(1)
				}
				if global.Add(n) > gCap {
					violations.Add(1)
				}
				for range r.IntN(4) {
					runtime.Gosched()
				}
				global.Add(-n)
				out[k].Add(-n)
				if r.IntN(8) == 0 {
					u.Release() // released twice: the second does nothing
				}
				u.Release()
			}
		})
	}
	go func() { wg.Wait(); close(holdersDone) }()
	<-holdersDone

	assert.Zero(t, violations.Load(), "a key or the global semaphore had more units out than its capacity")
	assert.Positive(t, granted.Load())
	st := s.Stats()
	assert.Equal(t, 0, st.Keys, "no key left in the map")
	assert.Equal(t, int64(0), st.Held)
	assert.Equal(t, 0, st.Waiters)
	assert.Equal(t, uint64(granted.Load()), st.Acquired)
	entries, _, _ := s.MapState()
	assert.Equal(t, 0, entries)
	require.NoError(t, s.Drain(context.Background()))
	switch {
	case limited:
		if !breakIt {
			s.Resize(gCap)
			u, ok := s.TryAcquire("0", 0)
			require.True(t, ok, "nobody waits at the limit")
			u.Release()
			u, ok = s.TryAcquire("3", 4) // capacity 4
			require.True(t, ok, "every unit of the limit came back")
			u.Release()
		}
	case breakIt:
		assert.ErrorIs(t, s.Err(), cause)
		assert.ErrorIs(t, g.Err(), cause)
		require.NoError(t, g.Drain(context.Background()), "every global unit came back")
	default:
		assert.Equal(t, int64(gCap), g.Available())
		assert.Equal(t, 0, g.Waiters())
	}
}

// TestStress_AKeyHasOneEntryAtATime makes two keys of capacity 1 active and
// inactive again as fast as goroutines can, so that a call finding a key's
// entry races the last holder removing it, and checks that no two calls ever
// hold the same key at once: an entry revived after its removal, or reused for
// another key while a call still counts on it, would give a key two
// semaphores.
func TestStress_AKeyHasOneEntryAtATime(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const keys = 6
	ops := 1_000_000
	if testing.Short() || raceEnabled {
		ops = 50_000
	}
	s := keyed.New(1)
	var holders [keys]atomic.Int32
	var violations, granted atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			var into keyed.Units
			for i := range ops {
				k := (i*7 + w) % keys // keys made active and inactive in turn, their entries passed from key to key
				key := strconv.Itoa(k)
				u := &into
				if w%2 == 0 {
					var ok bool
					if u, ok = s.TryAcquire(key, 1); !ok {
						continue
					}
				} else if err := s.AcquireInto(context.Background(), &into, key, 1); err != nil {
					t.Error(err)
					return
				}
				granted.Add(1)
				if holders[k].Add(1) > 1 || u.Key() != key {
					violations.Add(1)
				}
				holders[k].Add(-1)
				u.Release()
			}
		})
	}
	wg.Wait()
	assert.Zero(t, violations.Load(), "a key was held twice at once")
	assert.Equal(t, keyed.Stats{Acquired: uint64(granted.Load())}, s.Stats())
}

// cancelSome cancels the context of some calls the moment they are granted
// their key's units after waiting, so that the limit's grant meets a done
// context.
type cancelSome struct{ cancels sync.Map } // key -> context.CancelFunc

func (o *cancelSome) WaitEnded(_ *keyed.Set, key string, e semaphore.WaitEvent) {
	if c, ok := o.cancels.Load(key); ok && e.Outcome == semaphore.Granted {
		c.(context.CancelFunc)()
	}
}

func (*cancelSome) Broken(*keyed.Set, error) {}

// TestStress_TheLimitIsNeverExceededAtAnyGrant runs many goroutines on a few
// keys of a set with a limit of its own, weights and guarantees, with
// cancellations before, during and after the grants at both levels, timeouts,
// TryAcquire, AcquireInto into Units used again, and a goroutine resizing the
// limit without pause, and counts the units out on the test's side at every
// grant: never more than the largest limit set, never more than a key's
// capacity. Then every unit comes back, the counters agree with the test's
// count of calls granted and failed by outcome, and no key is left.
func TestStress_TheLimitIsNeverExceededAtAnyGrant(t *testing.T) {
	const (
		keys    = 6
		keyCap  = 3
		hi      = 5
		workers = 48
	)
	ops := 2000
	if testing.Short() || raceEnabled {
		ops = 300
	}
	obs := &cancelSome{}
	s := keyed.New(keyCap, keyed.WithName("stress"), keyed.WithLimit(hi), keyed.WithObserver(obs),
		keyed.WithWeightFunc(func(k string) int64 { i, _ := strconv.Atoi(k); return int64(i%3) + 1 }),
		keyed.WithGuaranteeFunc(func(k string) int64 { i, _ := strconv.Atoi(k); return int64(i % 2) }))

	var total atomic.Int64
	var out [keys]atomic.Int64
	var violations, granted atomic.Int64
	var failed [semaphore.Shed + 1]atomic.Uint64 // by outcome
	stop := make(chan struct{})
	var resizer sync.WaitGroup
	resizer.Go(func() {
		r := rand.New(rand.NewPCG(99, 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.Resize(hi - r.Int64N(hi+1)) // 0 to hi: the units out never exceed hi
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 3))
			var into keyed.Units // filled by AcquireInto, used again once released
			for range ops {
				k := r.IntN(keys)
				key := strconv.Itoa(k)
				n := r.Int64N(keyCap + 1)
				var u *keyed.Units
				var err error
				switch r.IntN(7) {
				case 6:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(500))*time.Microsecond)
					if err = s.AcquireInto(ctx, &into, key, n); err == nil {
						u = &into
					}
					cancel()
				case 0:
					var ok bool
					if u, ok = s.TryAcquire(key, n); !ok {
						continue
					}
				case 1:
					u, err = s.AcquireTimeout(time.Duration(r.IntN(100))*time.Microsecond, key, n)
				case 2:
					ctx, cancel := context.WithCancel(context.Background())
					yields := r.IntN(4)
					go func() {
						for range yields {
							runtime.Gosched()
						}
						cancel()
					}()
					u, err = s.Acquire(ctx, key, n)
					cancel()
				case 3:
					// Cancelled once a call of the key is granted its key's
					// units after waiting: the limit's grant, with or without
					// waiting, meets a done context.
					ctx, cancel := context.WithCancel(context.Background())
					obs.cancels.Store(key, context.CancelFunc(cancel))
					u, err = s.Acquire(ctx, key, n)
					cancel()
				default:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(2000))*time.Microsecond)
					u, err = s.Acquire(ctx, key, n)
					cancel()
				}
				if err != nil {
					require.Nil(t, u)
					o, ok := semaphore.OutcomeOf(err)
					assert.True(t, ok, err)
					assert.Contains(t, []semaphore.Outcome{semaphore.Cancelled, semaphore.TimedOut, semaphore.TooLarge}, o, err)
					failed[o].Add(1)
					continue
				}
				granted.Add(1)
				if total.Add(n) > hi {
					violations.Add(1)
				}
				if out[k].Add(n) > keyCap {
					violations.Add(1)
				}
				for range r.IntN(3) {
					runtime.Gosched()
				}
				out[k].Add(-n)
				total.Add(-n)
				u.Release()
			}
		})
	}
	wg.Wait()
	close(stop)
	resizer.Wait()

	assert.Zero(t, violations.Load(), "more units out than the limit or a key's capacity")
	assert.Positive(t, granted.Load())
	st := s.Stats()
	assert.Equal(t, 0, st.Keys)
	assert.Equal(t, int64(0), st.Held)
	assert.Equal(t, 0, st.Waiters)
	assert.Equal(t, uint64(granted.Load()), st.Acquired)
	assert.Equal(t, failed[semaphore.TimedOut].Load(), st.TimedOut, "calls that timed out, counted once")
	assert.Equal(t, failed[semaphore.Cancelled].Load(), st.Cancelled, "calls cancelled, counted once")
	assert.Equal(t, failed[semaphore.TooLarge].Load(), st.Rejected, "calls refused as too large, counted once")
	s.Resize(hi)
	var all []*keyed.Units
	for k := range hi {
		u, ok := s.TryAcquire(strconv.Itoa(k), 1)
		require.True(t, ok, "every unit of the limit came back, and nobody waits")
		all = append(all, u)
	}
	x, ok := s.TryAcquire("x", 1)
	assert.False(t, ok, "the limit is exact")
	x.Release()
	for _, u := range all {
		u.Release()
	}
	require.NoError(t, s.Drain(context.Background()))
}
