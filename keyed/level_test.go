package keyed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

// The rules every level of a set keeps, each checked where a call meets it: at
// its key's own level, at the set's limit (WithLimit), and at a global
// semaphore (WithGlobal). At the key level the calls share a key of capacity
// c; at the second level every call has a key of its own without a limit
// (NoKeyLimit), so that it waits only at the second level, of capacity c.

// levelSet makes a set whose level under test has capacity c, and returns the
// keys the calls of a test use: one key for all at the key level, a key per
// call at the others.
func levelSet(level string, c int64) (s *keyed.Set, keyOf func(i int) string) {
	switch level {
	case "key":
		return keyed.New(c), func(int) string { return "k" }
	case "limit":
		return keyed.New(keyed.NoKeyLimit, keyed.WithLimit(c)), func(i int) string { return string(rune('a' + i)) }
	default:
		return keyed.New(keyed.NoKeyLimit, keyed.WithGlobal(semaphore.New(c))), func(i int) string { return string(rune('a' + i)) }
	}
}

var levels = []string{"key", "limit", "global"}

// A call whose context was cancelled before the release that would grant it
// fails with its context's error and holds nothing; the units go to the next
// call, at every level.
func TestRules_ACancellationBeforeTheGrantWinsAtEveryLevel(t *testing.T) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, keyOf := levelSet(level, 1)
				x, ok := s.TryAcquire(keyOf(0), 1)
				require.True(t, ok)
				ctx, cancel := context.WithCancel(context.Background())
				first := acquireAsync(ctx, s, keyOf(1), 1)
				synctest.Wait()
				second := acquireAsync(context.Background(), s, keyOf(2), 1)
				synctest.Wait()
				cancel() // before the release that would grant it
				x.Release()
				r := <-first
				require.ErrorIs(t, r.err, context.Canceled)
				o, _ := semaphore.OutcomeOf(r.err)
				assert.Equal(t, semaphore.Cancelled, o)
				assert.Nil(t, r.u)
				r = <-second
				require.NoError(t, r.err, "the unit went on to the next call")
				assert.Equal(t, int64(1), s.Stats().Held)
				assert.Equal(t, uint64(2), s.Stats().Acquired, "the grant the cancelled call gave back is not counted")
				r.u.Release()
				assert.Equal(t, keyed.Stats{Acquired: 2, Cancelled: 1, Limit: s.Stats().Limit, Limited: s.Stats().Limited}, s.Stats())
			})
		})
	}
}

// TryAcquire never takes units a waiting call is owed, even when they are
// free, at every level.
func TestRules_TryAcquireNeverJumpsAWaiterAtEveryLevel(t *testing.T) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, keyOf := levelSet(level, 2)
				x, ok := s.TryAcquire(keyOf(0), 1)
				require.True(t, ok)
				w := acquireAsync(context.Background(), s, keyOf(1), 2)
				synctest.Wait()
				_, ok = s.TryAcquire(keyOf(2), 1)
				assert.False(t, ok, "one unit is free, but a call waiting for two is ahead")
				_, err := s.AcquireTimeout(0, keyOf(2), 1)
				assert.ErrorIs(t, err, semaphore.ErrTimedOut, "nor does AcquireTimeout without a timeout")
				x.Release()
				r := <-w
				require.NoError(t, r.err)
				r.u.Release()
				u, ok := s.TryAcquire(keyOf(2), 2)
				assert.True(t, ok, "with nobody waiting, free units are taken")
				u.Release()
			})
		})
	}
}

// The calls of one key are granted in the order they came, at every level:
// at the limit and the global semaphore, a key's calls need no more than a
// level's capacity between them.
func TestRules_AKeysCallsAreServedInTheOrderTheyCameAtEveryLevel(t *testing.T) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, _ := levelSet(level, 1)
				x, ok := s.TryAcquire("x", 1)
				require.True(t, ok)
				calls := queue(t, s, "k", 4) // all at the one key: at the second level too
				held := x
				for i, ch := range calls {
					held.Release()
					r := <-ch
					require.NoError(t, r.err, "call %d", i)
					for _, later := range calls[i+1:] {
						select {
						case <-later:
							t.Fatalf("a later call of the key was granted before call %d", i)
						default:
						}
					}
					held = r.u
				}
				held.Release()
			})
		})
	}
}

// The fair limit charges a key by the units it is granted, not by its calls:
// two backlogged keys of one weight, one asking two units a call and one
// asking one, are granted the same units.
func TestLimit_ChargesAGrantByItsUnitsNotByTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(keyed.NoKeyLimit, keyed.WithLimit(12))
		x, ok := s.TryAcquire("x", 12)
		require.True(t, ok)
		var pairs, ones []<-chan result
		for range 12 {
			pairs = append(pairs, acquireAsync(context.Background(), s, "pairs", 2))
			synctest.Wait()
		}
		ones = queue(t, s, "ones", 12)
		x.Release() // 12 units for the two keys
		synctest.Wait()
		assert.Equal(t, int64(6), s.KeyStats("pairs").Held, "2 units a call: 3 calls")
		assert.Equal(t, int64(6), s.KeyStats("ones").Held, "1 unit a call: 6 calls")
		finish(s, nil, pairs, ones)
	})
}

// A key that was served less than its share while it asked for nothing at
// the limit (its calls waited at its own level, or it had none) is owed what
// it missed, but at most a limit's worth: its burst goes first by that much,
// and then the keys take turns.
func TestLimit_AKeyThatFellBehindCatchesUpByAtMostTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 3
		s := keyed.New(keyed.NoKeyLimit, keyed.WithLimit(limit))
		keepA, _ := s.TryAcquire("a", 0) // a stays active throughout
		var held []*keyed.Units
		for range limit {
			u, ok := s.TryAcquire("x", 1)
			require.True(t, ok)
			held = append(held, u)
		}
		// serve releases one unit and returns whose call it granted.
		var order []string
		serve := func(calls map[string][]<-chan result) {
			t.Helper()
			held[0].Release()
			held = held[1:]
			synctest.Wait()
			for key, chs := range calls {
				for i, ch := range chs {
					if ch == nil {
						continue
					}
					select {
					case r := <-ch:
						require.NoError(t, r.err)
						held = append(held, r.u)
						order = append(order, key)
						chs[i] = nil
					default:
					}
				}
			}
		}
		serve(map[string][]<-chan result{"a": queue(t, s, "a", 1)}) // a waits once: it is not new
		bs := queue(t, s, "b", 10)
		for range 10 {
			serve(map[string][]<-chan result{"b": bs}) // b is served 10 units; a asks for nothing
		}
		order = nil
		burst := map[string][]<-chan result{"a": queue(t, s, "a", 8), "b": queue(t, s, "b", 8)}
		for range 8 {
			serve(burst)
		}
		// a's start tags: 6, 7, 8, 9 (a limit's worth behind b), then 10, a
		// tie with b won by a's older call; then they alternate.
		assert.Equal(t, []string{"a", "a", "a", "a", "a", "b", "a", "b"}, order)
		finish(s, append(held, keepA), burst["a"], burst["b"])
	})
}

// NoKeyLimit makes a set whose keys are limited only together, by the fair
// limit.
func TestNew_NoKeyLimitLimitsKeysOnlyTogether(t *testing.T) {
	s := keyed.New(keyed.NoKeyLimit, keyed.WithLimit(10))
	u, ok := s.TryAcquire("a", 10)
	require.True(t, ok, "one key may take the whole limit")
	assert.Equal(t, int64(semaphore.MaxUnits), s.KeyStats("a").Capacity)
	_, ok = s.TryAcquire("b", 1)
	assert.False(t, ok, "the limit binds")
	u.Release()
}

// coreRecorder is a semaphore.Observer that keeps what it hears, for comparing
// a set's observer with the core's.
type coreRecorder struct {
	mu     sync.Mutex
	events []semaphore.WaitEvent
}

func (r *coreRecorder) WaitEnded(_ *semaphore.Semaphore, e semaphore.WaitEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}
func (*coreRecorder) Broken(*semaphore.Semaphore, error) {}

// setRecorder is a keyed.Observer that keeps what it hears.
type setRecorder struct {
	mu     sync.Mutex
	keys   []string
	events []semaphore.WaitEvent
}

func (r *setRecorder) WaitEnded(_ *keyed.Set, key string, e semaphore.WaitEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
	r.events = append(r.events, e)
}
func (*setRecorder) Broken(*keyed.Set, error) {}

// After Break, a set's observer hears the calls it refuses as a semaphore's
// observer hears the ones a broken semaphore refuses: Acquire, AcquireInto and
// AcquireTimeout, broken (or with their context's outcome when it was done
// first), not queued; TryAcquire never.
func TestObserver_HearsCallsRefusedAfterBreakAsTheCoresObserverDoes(t *testing.T) {
	cause := errors.New("shutting down")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	calls := func(acquire func(context.Context, int64) error, acquireTimeout func(time.Duration, int64) error, try func(int64) bool) {
		_ = acquire(context.Background(), 1)
		_ = acquireTimeout(time.Second, 2)
		_ = acquireTimeout(0, 3)
		_ = acquire(done, 4) // a done context is reported first, broken or not
		try(5)
	}

	core := &coreRecorder{}
	sem := semaphore.New(10, semaphore.WithObserver(core))
	sem.Break(cause)
	calls(sem.Acquire, sem.AcquireTimeout, sem.TryAcquire)

	obs := &setRecorder{}
	s := keyed.New(10, keyed.WithObserver(obs))
	active, _ := s.TryAcquire("active", 0) // a key active when the set breaks, and one made after
	s.Break(cause)
	for _, key := range []string{"active", "later"} {
		calls(func(ctx context.Context, n int64) error {
			var u keyed.Units
			if n == 1 {
				return s.AcquireInto(ctx, &u, key, n)
			}
			_, err := s.Acquire(ctx, key, n)
			return err
		}, func(d time.Duration, n int64) error {
			_, err := s.AcquireTimeout(d, key, n)
			return err
		}, func(n int64) bool {
			_, ok := s.TryAcquire(key, n)
			return ok
		})
	}
	require.Len(t, core.events, 4)
	assert.Equal(t, semaphore.Broken, core.events[0].Outcome)
	assert.Equal(t, semaphore.Cancelled, core.events[3].Outcome)
	assert.Equal(t, append(core.events, core.events...), obs.events)
	assert.Equal(t, []string{"active", "active", "active", "active", "later", "later", "later", "later"}, obs.keys)
	active.Release()
}
