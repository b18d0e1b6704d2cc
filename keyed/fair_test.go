package keyed_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/keyed"
)

// weights gives keys "a".."z" weights from a map, 1 for the others.
func weightsOf(m map[string]int64) func(string) int64 {
	return func(k string) int64 {
		if w, ok := m[k]; ok {
			return w
		}
		return 1
	}
}

// queue starts n Acquire calls of one unit each on key, one after the other
// (each queued before the next starts), and returns their results in order.
func queue(t *testing.T, s *keyed.Set, key string, n int) []<-chan result {
	t.Helper()
	var chs []<-chan result
	for range n {
		chs = append(chs, acquireAsync(context.Background(), s, key, 1))
		synctest.Wait()
	}
	return chs
}

// granted takes the results that have arrived, in order, keeps their Units,
// and sets their channels to nil.
func granted(t *testing.T, chs []<-chan result, into *[]*keyed.Units) int {
	t.Helper()
	k := 0
	for i, ch := range chs {
		if ch == nil {
			continue
		}
		select {
		case r := <-ch:
			require.NoError(t, r.err)
			*into = append(*into, r.u)
			chs[i] = nil
			k++
		default:
		}
	}
	return k
}

// finish breaks s, releases held and waits for the calls still out.
func finish(s *keyed.Set, held []*keyed.Units, chs ...[]<-chan result) {
	s.Break(nil)
	for _, u := range held {
		u.Release()
	}
	for _, c := range chs {
		for _, ch := range c {
			if ch != nil {
				<-ch
			}
		}
	}
}

func TestLimit_WaitingKeysHoldUnitsInProportionToTheirWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(100, keyed.WithLimit(10), keyed.WithWeightFunc(weightsOf(map[string]int64{"b": 4})))
		filler, ok := s.TryAcquire("x", 10)
		require.True(t, ok)
		a, b := queue(t, s, "a", 10), queue(t, s, "b", 10)
		filler.Release()
		synctest.Wait()
		var held []*keyed.Units
		assert.Equal(t, 2, granted(t, a, &held), "a, weight 1: a fifth of the limit")
		assert.Equal(t, 8, granted(t, b, &held), "b, weight 4: four fifths")
		ks := s.KeyStats("b")
		assert.Equal(t, keyed.KeyStats{Key: "b", Capacity: 100, Held: 8, Waiters: 2, Weight: 4, Share: 8, Acquired: 8}, ks)
		finish(s, held, a, b)
	})
}

func TestLimit_UnitsReleasedGoFirstToAKeyBelowItsGuarantee(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(100, keyed.WithLimit(4),
			keyed.WithWeightFunc(weightsOf(map[string]int64{"heavy": 100})),
			keyed.WithGuaranteeFunc(func(k string) int64 {
				if k == "owner" {
					return 2
				}
				return 0
			}))
		// The owner is idle: its guaranteed units are lent at once.
		var heavy []*keyed.Units
		for range 4 {
			u, ok := s.TryAcquire("heavy", 1)
			require.True(t, ok, "units nobody wants are lent at once")
			heavy = append(heavy, u)
		}
		moreHeavy := queue(t, s, "heavy", 2)
		owner := queue(t, s, "owner", 3)
		// The owner lacks 2 units of its guarantee: the next 2 released go to it,
		// although heavy weighs 100 times more.
		var got []*keyed.Units
		heavy[0].Release()
		synctest.Wait()
		assert.Equal(t, 1, granted(t, owner, &got))
		heavy[1].Release()
		synctest.Wait()
		assert.Equal(t, 1, granted(t, owner[1:], &got), "the guarantee is back within 2 units released")
		assert.Equal(t, int64(2), s.KeyStats("owner").Held)
		// At its guarantee, the owner is one key among others, by weight.
		heavy[2].Release()
		synctest.Wait()
		assert.Equal(t, 1, granted(t, moreHeavy, &got), "then by weight: heavy")
		assert.Equal(t, 0, granted(t, owner[2:], &got))
		finish(s, append(heavy[2:], got...), moreHeavy, owner)
	})
}

func TestLimit_KeysOrderIsFIFOAndALargeHeadIsNotOvertaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(100, keyed.WithLimit(3))
		filler, ok := s.TryAcquire("x", 3)
		require.True(t, ok)
		big := acquireAsync(context.Background(), s, "a", 3)
		synctest.Wait()
		small := acquireAsync(context.Background(), s, "a", 1)
		other := acquireAsync(context.Background(), s, "b", 1)
		synctest.Wait()
		filler.Release() // 3 free, and a's head wants 3: it goes first, alone
		synctest.Wait()
		r := <-big
		require.NoError(t, r.err)
		select {
		case <-small:
			t.Fatal("a's second call was granted with the limit full")
		case <-other:
			t.Fatal("b's call was granted with the limit full")
		default:
		}
		r.u.Release()
		for _, ch := range []<-chan result{small, other} {
			r := <-ch
			require.NoError(t, r.err)
			r.u.Release()
		}
	})
}

func TestLimit_UnitsWaitForTheKeyThatComesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(100, keyed.WithLimit(3))
		a, ok := s.TryAcquire("a", 3)
		require.True(t, ok)
		big := acquireAsync(context.Background(), s, "b", 3)
		synctest.Wait()
		small := acquireAsync(context.Background(), s, "c", 1)
		synctest.Wait()
		// b and c hold nothing; b waited first. One unit free is not for c.
		a.Release()
		r := <-big
		require.NoError(t, r.err)
		r.u.Release()
		r = <-small
		require.NoError(t, r.err)
		r.u.Release()
	})
}

func TestLimit_IsNeverExceededAndTryAcquireDoesNotJumpTheLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(100, keyed.WithLimit(2))
		u, ok := s.TryAcquire("a", 2)
		require.True(t, ok)
		_, ok = s.TryAcquire("b", 1)
		assert.False(t, ok, "the limit is full")
		w := acquireAsync(context.Background(), s, "b", 2)
		synctest.Wait()
		u.Release()
		r := <-w
		require.NoError(t, r.err)
		_, ok = s.TryAcquire("c", 0)
		assert.True(t, ok, "0 units fit a full limit when nobody waits")
		r.u.Release()
	})
}

func TestLimit_ResizeGrantsWhenGrowingAndRevokesNothingWhenShrinking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(100, keyed.WithName("up"), keyed.WithLimit(2))
		u, _ := s.TryAcquire("a", 2)
		w := acquireAsync(context.Background(), s, "b", 1)
		synctest.Wait() // b is older than c: served first on a tie
		tooBig := acquireAsync(context.Background(), s, "c", 2)
		synctest.Wait()
		s.Resize(3)
		r := <-w
		require.NoError(t, r.err, "the grown limit grants the waiter")
		assert.Equal(t, int64(3), s.Stats().Limit)
		s.Resize(1) // 3 held, none taken back
		r2 := <-tooBig
		require.ErrorIs(t, r2.err, semaphore.ErrTooLarge)
		assert.Equal(t, `keyed "up": acquire 2 units for key "c": more than the limit, which was reduced while waiting`, r2.err.Error())
		assert.Equal(t, int64(3), s.Stats().Held)
		u.Release()
		_, ok := s.TryAcquire("d", 1)
		assert.False(t, ok, "1 held of a limit of 1")
		r.u.Release()
		x, ok := s.TryAcquire("d", 1)
		assert.True(t, ok)
		x.Release()
		_, err := s.Acquire(context.Background(), "e", 2)
		require.ErrorIs(t, err, semaphore.ErrTooLarge)
		assert.Equal(t, `keyed "up": acquire 2 units for key "e": more than the limit of 1`, err.Error())
		assert.Equal(t, uint64(2), s.Stats().Rejected)
	})
}

func TestLimit_TimeoutAndCancellationLetTheNextGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(100, keyed.WithName("up"), keyed.WithLimit(2))
		u, _ := s.TryAcquire("a", 1)
		ctx, cancel := context.WithCancel(context.Background())
		big := acquireAsync(ctx, s, "b", 2) // at the head: holds up c
		synctest.Wait()
		c := acquireAsync(context.Background(), s, "c", 1)
		synctest.Wait()
		_, err := s.AcquireTimeout(time.Second, "d", 1)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, `keyed "up": acquire 1 unit for key "d": timed out after 1s waiting for the limit of 2 units`, err.Error())
		_, err = s.AcquireTimeout(0, "d", 1)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		cancel()
		r := <-big
		require.ErrorIs(t, r.err, context.Canceled)
		r = <-c
		require.NoError(t, r.err, "the cancelled head no longer holds the line up")
		r.u.Release()
		u.Release()
		st := s.Stats()
		assert.Equal(t, uint64(2), st.TimedOut)
		assert.Equal(t, uint64(1), st.Cancelled)
		assert.Equal(t, 0, st.Keys)
	})
}

func TestLimit_BreakFailsItsWaitersAndLaterCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(100, keyed.WithLimit(1))
		u, _ := s.TryAcquire("a", 1)
		w := acquireAsync(context.Background(), s, "b", 1)
		synctest.Wait()
		cause := errors.New("shutting down")
		s.Break(cause)
		r := <-w
		require.ErrorIs(t, r.err, semaphore.ErrBroken)
		require.ErrorIs(t, r.err, cause)
		o, _ := semaphore.OutcomeOf(r.err)
		assert.Equal(t, semaphore.Broken, o)
		u.Release()
		_, ok := s.TryAcquire("a", 1)
		assert.False(t, ok)
		s.Resize(5) // nothing on a broken set
		assert.Equal(t, int64(1), s.Stats().Limit)
		require.NoError(t, s.Drain(context.Background()))
	})
}

func TestLimit_OptionsPanicOnMisuse(t *testing.T) {
	assert.PanicsWithValue(t, "keyed: WithLimit(-1): negative", func() { keyed.WithLimit(-1) })
	assert.PanicsWithValue(t, "keyed: WithWeightFunc(nil)", func() { keyed.WithWeightFunc(nil) })
	assert.PanicsWithValue(t, "keyed: WithGuaranteeFunc(nil)", func() { keyed.WithGuaranteeFunc(nil) })
	assert.PanicsWithValue(t, `keyed "x": WithLimit and WithGlobal together: the set has one global level`, func() {
		keyed.New(1, keyed.WithName("x"), keyed.WithLimit(1), keyed.WithGlobal(semaphore.New(1)))
	})
	assert.PanicsWithValue(t, `keyed "x": WithWeightFunc and WithGuaranteeFunc share a limit: they need WithLimit`, func() {
		keyed.New(1, keyed.WithName("x"), keyed.WithWeightFunc(weightsOf(nil)))
	})
	assert.PanicsWithValue(t, `keyed "x": Resize(1): the set has no limit of its own (WithLimit)`, func() {
		keyed.New(1, keyed.WithName("x")).Resize(1)
	})
	assert.PanicsWithValue(t, `keyed "x": Resize(-1): negative`, func() {
		keyed.New(1, keyed.WithName("x"), keyed.WithLimit(1)).Resize(-1)
	})
	for _, w := range []int64{0, -1, keyed.MaxWeight + 1} {
		s := keyed.New(1, keyed.WithName("x"), keyed.WithLimit(1), keyed.WithWeightFunc(func(string) int64 { return w }))
		assert.Panics(t, func() { s.TryAcquire("k", 1) }, "weight %d", w)
	}
	s := keyed.New(1, keyed.WithName("x"), keyed.WithLimit(1), keyed.WithGuaranteeFunc(func(string) int64 { return -1 }))
	assert.PanicsWithValue(t, `keyed "x": guarantee -1 for key "k": negative`, func() { s.TryAcquire("k", 1) })
	s = keyed.New(1, keyed.WithLimit(1<<62), keyed.WithWeightFunc(func(string) int64 { return keyed.MaxWeight }))
	n, ok := s.Limit()
	assert.True(t, ok)
	assert.Equal(t, int64(semaphore.MaxUnits), n, "a huge limit means MaxUnits")
	_, ok = keyed.New(1).Limit()
	assert.False(t, ok, "no limit of its own")
	u, ok := s.TryAcquire("k", 1)
	require.True(t, ok, "MaxWeight is a weight")
	u.Release()
}

func TestLimit_GrantsFollowTheWeightsExactlyWhenTheLimitIsSmall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A limit of 8 split 1:4 cannot be held as 1.6 and 6.4 units; by virtual
		// time, one grant in five goes to a, and so one unit held in five on
		// average when calls hold their units alike.
		s := keyed.New(100, keyed.WithLimit(8), keyed.WithWeightFunc(weightsOf(map[string]int64{"b": 4})))
		var held []*keyed.Units // oldest first: every call holds its units alike
		for range 8 {
			u, ok := s.TryAcquire("x", 1)
			require.True(t, ok)
			held = append(held, u)
		}
		a, b := queue(t, s, "a", 60), queue(t, s, "b", 60)
		count := map[string]int{}
		for range 50 {
			held[0].Release()
			held = held[1:]
			synctest.Wait()
			for _, chs := range [][]<-chan result{a, b} {
				var got []*keyed.Units
				granted(t, chs, &got)
				for _, u := range got {
					count[u.Key()]++
				}
				held = append(held, got...)
			}
		}
		assert.Equal(t, map[string]int{"a": 10, "b": 40}, count)
		finish(s, held, a, b)
	})
}

func TestResize_AnAdaptiveLimiterDrivesTheLimit(t *testing.T) {
	s := keyed.New(4, keyed.WithLimit(100))
	var _ adaptive.Resizer = s
	l := adaptive.New(s, adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 7, MinLimit: 7}))
	n, _ := s.Limit()
	assert.Equal(t, int64(7), n, "the limiter applies its limit to the set at once")
	assert.Equal(t, l.Limit(), int(n))
}

func TestLimit_AWaiterWhoseContextEndedGetsNothingAndCostsItsKeyNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(4, keyed.WithLimit(1))
		x, _ := s.TryAcquire("x", 1)
		keep, _ := s.TryAcquire("a", 0) // keeps a active: 1 grant
		ctx, cancel := context.WithCancel(context.Background())
		dead := acquireAsync(ctx, s, "a", 1)
		synctest.Wait()
		next := acquireAsync(context.Background(), s, "b", 1)
		synctest.Wait()
		cancel()
		x.Release() // before a's call has seen its context end
		r := <-dead
		require.ErrorIs(t, r.err, context.Canceled)
		r = <-next
		require.NoError(t, r.err)
		assert.Equal(t, uint64(1), s.KeyStats("a").Acquired, "a was not granted the unit its call would not use")
		r.u.Release()
		keep.Release()
	})
}

func TestLimit_AKeyActiveAnewOwesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(4, keyed.WithLimit(1))
		x, _ := s.TryAcquire("x", 1)
		r := acquireAsync(context.Background(), s, "a", 1)
		synctest.Wait()
		x.Release() // a is granted at the limit: its virtual time moves ahead
		got := <-r
		require.NoError(t, got.err)
		got.u.Release() // a is inactive: its entry is kept for reuse
		y, _ := s.TryAcquire("y", 1)
		a := acquireAsync(context.Background(), s, "a", 1) // active anew
		synctest.Wait()
		b := acquireAsync(context.Background(), s, "b", 1)
		synctest.Wait()
		y.Release()
		got = <-a
		require.NoError(t, got.err, "a waited first and owes nothing from before")
		got.u.Release()
		got = <-b
		require.NoError(t, got.err)
		got.u.Release()
	})
}

func TestLimit_EdgesOfItsRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(4, keyed.WithName("edge"), keyed.WithLimit(0),
			keyed.WithGuaranteeFunc(func(string) int64 { return 10 })) // above the capacity: taken as 4
		u, ok := s.TryAcquire("k", 0)
		require.True(t, ok, "a limit of 0 admits requests for 0 units")
		assert.Equal(t, int64(4), s.KeyStats("k").Guarantee, "a guarantee is at most the key's capacity")
		_, err := s.Acquire(context.Background(), "k", 1)
		require.ErrorIs(t, err, semaphore.ErrTooLarge)
		_, err = s.AcquireTimeout(-time.Second, "k", 1)
		require.ErrorIs(t, err, semaphore.ErrTooLarge, "too large comes before a timeout that does not wait")
		s.Resize(1)
		w, ok := s.TryAcquire("k", 1)
		require.True(t, ok)
		_, err = s.AcquireTimeout(-time.Second, "j", 1)
		require.ErrorIs(t, err, semaphore.ErrTimedOut, "a negative timeout never waits")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = s.Acquire(ctx, "j", 1)
		require.ErrorIs(t, err, context.Canceled, "a done context is reported first")
		w.Release()
		u.Release()
		s.Resize(math.MaxInt64)
		n, _ := s.Limit()
		assert.Equal(t, int64(semaphore.MaxUnits), n, "a huge Resize means MaxUnits")
	})
}

func TestDiagnostics_HostileKeysStayOnOneLineEach(t *testing.T) {
	s := keyed.New(2, keyed.WithName("up"), keyed.WithLimit(4))
	long := strings.Repeat("x", 5000)
	var us []*keyed.Units
	for _, key := range []string{"a\nb", "<script>alert(1)</script>", long, ""} {
		u, ok := s.TryAcquire(key, 1)
		require.True(t, ok)
		us = append(us, u)
	}
	d := s.Diagnostics(0)
	assert.Len(t, strings.Split(strings.TrimSuffix(d, "\n"), "\n"), 2+4, "a header, the limit's line and one row per key")
	assert.Contains(t, d, `"a\nb"`, "a key is quoted, its newline escaped")
	assert.Contains(t, d, `"<script>alert(1)</script>"`)
	assert.Contains(t, d, `""`)
	assert.Equal(t, int64(5000), int64(len(s.KeyStats(long).Key)))
	_, err := s.Acquire(context.Background(), "a\nb", 3)
	assert.Contains(t, err.Error(), `for key "a\nb": more than the capacity of 2`)
	for _, u := range us {
		u.Release()
	}
}

func TestLimit_AGrantThatRacesTheContextIsGivenBackAndNotCharged(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // the waiter runs only when the test blocks
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(4, keyed.WithLimit(1))
		x, _ := s.TryAcquire("x", 1)
		keep, _ := s.TryAcquire("a", 0) // keeps a active: 1 grant, and its virtual time
		ctx, cancel := context.WithCancel(context.Background())
		raced := acquireAsync(ctx, s, "a", 1)
		synctest.Wait()
		b1 := acquireAsync(context.Background(), s, "b", 1)
		synctest.Wait()
		x.Release() // grants a's call, which waited first...
		cancel()    // ...and its context ends before it runs
		r := <-raced
		require.ErrorIs(t, r.err, context.Canceled, "granted as its context ended: the caller sees the context's error")
		assert.Equal(t, uint64(1), s.KeyStats("a").Acquired, "the grant it did not use is not counted")
		assert.Equal(t, int64(0), s.KeyStats("a").Held)
		r = <-b1
		require.NoError(t, r.err, "the unit came back and went to b")
		// b was granted a unit and a none: a's next call goes before b's,
		// although b's waited first.
		b2 := acquireAsync(context.Background(), s, "b", 1)
		synctest.Wait()
		a2 := acquireAsync(context.Background(), s, "a", 1)
		synctest.Wait()
		r.u.Release()
		synctest.Wait()
		next := b2
		select {
		case r = <-a2:
		case r = <-b2:
			assert.Fail(t, "b was served first: a's virtual time still counts the unit it gave back")
			next = a2
		}
		require.NoError(t, r.err)
		r.u.Release()
		r = <-next
		require.NoError(t, r.err)
		r.u.Release()
		keep.Release()
	})
}

// cancelOnKeyGrant cancels a context the moment its call is granted its key's
// units after waiting: between the key level's grant and the global level's.
type cancelOnKeyGrant struct{ cancel context.CancelFunc }

func (o cancelOnKeyGrant) WaitEnded(_ *keyed.Set, _ string, e semaphore.WaitEvent) {
	if e.Outcome == semaphore.Granted {
		o.cancel()
	}
}

func (cancelOnKeyGrant) Broken(*keyed.Set, error) {}

func TestLimit_ACancellationBeforeTheLimitsGrantWins(t *testing.T) {
	for _, level := range []string{"limit", "global"} {
		t.Run(level, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				opts := []keyed.Option{keyed.WithObserver(cancelOnKeyGrant{cancel})}
				g := semaphore.New(4)
				if level == "limit" {
					opts = append(opts, keyed.WithLimit(4))
				} else {
					opts = append(opts, keyed.WithGlobal(g))
				}
				s := keyed.New(4, opts...)
				x, _ := s.TryAcquire("k", 4)
				call := acquireAsync(ctx, s, "k", 1)
				synctest.Wait()
				x.Release() // grants the key's unit; the context ends before the global level grants
				r := <-call
				require.ErrorIs(t, r.err, context.Canceled, "the context ended before the global level's grant")
				assert.Nil(t, r.u)
				assert.Equal(t, int64(0), s.Stats().Held)
				u, ok := s.TryAcquire("j", 4)
				require.True(t, ok, "every unit of the global level came back")
				u.Release()
			})
		})
	}
}

func TestLimit_AZeroUnitRequestWaitsItsTurnLikeAnyOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := keyed.New(4, keyed.WithLimit(1))
		x, _ := s.TryAcquire("x", 1)
		a1 := acquireAsync(context.Background(), s, "a", 1)
		synctest.Wait()
		a0 := acquireAsync(context.Background(), s, "a", 0)
		synctest.Wait()
		b1 := acquireAsync(context.Background(), s, "b", 1)
		synctest.Wait()
		x.Release() // a's first call waited first: granted; a's virtual time is now ahead of b's
		r := <-a1
		require.NoError(t, r.err)
		select {
		case <-a0:
			t.Fatal("a's 0-unit call was granted while a owes and b's call waits for the limit")
		default:
		}
		_, ok := s.TryAcquire("c", 0)
		assert.False(t, ok, "TryAcquire(0) does not jump the calls waiting at the limit")
		r.u.Release() // b's turn, then a's
		r = <-b1
		require.NoError(t, r.err)
		z := <-a0
		require.NoError(t, z.err, "a's turn comes after b's grant, although its call waited longer")
		z.u.Release()

		s.Resize(0) // b holds 1 unit above the new limit
		_, ok = s.TryAcquire("a", 0)
		assert.False(t, ok, "no 0-unit grant while the units held exceed the limit")
		a0 = acquireAsync(context.Background(), s, "a", 0)
		synctest.Wait()
		select {
		case <-a0:
			t.Fatal("a 0-unit call was granted while the units held exceed the limit")
		default:
		}
		r.u.Release()
		z = <-a0
		require.NoError(t, z.err, "granted once the units held are within the limit")
		z.u.Release()
	})
}
