package semaphore_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	xsem "golang.org/x/sync/semaphore"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/xsync/semaphore"
)

// weighted is the API both implementations share.
type weighted interface {
	Acquire(context.Context, int64) error
	TryAcquire(int64) bool
	Release(int64)
}

// twin is one Acquire call made identically on both implementations.
type twin struct {
	n       int64
	ours    *acquirer
	theirs  *acquirer
	counted bool // its grant is in the fuzz's held total
}

// fuzzInput hands out the fuzz's bytes one at a time, then zeros.
type fuzzInput []byte

func (in *fuzzInput) next() byte {
	if len(*in) == 0 {
		return 0
	}
	b := (*in)[0]
	*in = (*in)[1:]
	return b
}

// fuzzSize draws the size from every range the implementation treats apart:
// small, around 2^43 and 2^44 (the core's MaxUnits is 2^44-1: below it the core
// counts, above it the exact path does), 2^50, 2^62, math.MaxInt64, any power of
// two in between, and the zero Weighted.
func fuzzSize(class, off byte) (size int64, zeroValue bool) {
	switch class % 8 {
	case 0:
		return 0, off%2 == 0 // the zero Weighted or NewWeighted(0)
	case 1:
		return 1 + int64(off%8), false
	case 2:
		return 1<<43 - 2 + int64(off%4), false
	case 3:
		return 1<<44 - 2 + int64(off%4), false
	case 4:
		return 1<<50 + int64(off%4), false
	case 5:
		return 1<<62 - 2 + int64(off%4), false
	case 6:
		return math.MaxInt64 - int64(off%4), false
	default:
		return math.MaxInt64 >> (off % 63), false
	}
}

// fuzzWeight draws a request: near 0, near 2^43, 2^44 and 2^62, near the size,
// just above it, a fraction of it, or near what is free now (size-held).
func fuzzWeight(class, off byte, size, held int64) int64 {
	k := int64(off % 4)
	var n int64
	switch class % 8 {
	case 0:
		n = k
	case 1:
		n = 1<<43 - 2 + k
	case 2:
		n = 1<<44 - 2 + k
	case 3:
		n = 1<<62 - 2 + k
	case 4:
		n = size - k
	case 5:
		n = size + 1 + k%2
		if n < 0 { // overflowed: the size is within 2 of math.MaxInt64
			n = math.MaxInt64
		}
	case 6:
		n = size / (k + 2)
	default:
		n = size - held + k - 1
	}
	return max(n, 0)
}

// fuzzPiece draws an amount to release from the held total, 0 to held: small,
// all of it, all but a little, a fraction, or a size near 2^43, 2^44 or 2^62.
func fuzzPiece(class, off byte, held int64) int64 {
	k := int64(off % 4)
	switch class % 6 {
	case 0:
		return min(k, held)
	case 1:
		return held
	case 2:
		return held - min(k, held)
	case 3:
		return held / (k + 2)
	case 4:
		return min([]int64{1<<43 - 1, 1 << 44, 1<<62 - 1, 1}[k], held)
	default:
		return min(held/2+1, held)
	}
}

// FuzzWeightedMatchesXSync runs one sequence of calls against this package and
// against golang.org/x/sync/semaphore in a synctest bubble, waiting after each step
// until every goroutine is blocked, and requires the two to agree on every
// outcome: which Acquire calls returned and with what error, every TryAcquire, and
// which calls panicked. x/sync is the model. Sizes go from 0 (and the zero value)
// to math.MaxInt64; the calls cover queued and too-large waiters, grants,
// cancellations anywhere in the queue, n = 0, done contexts, releases of the held
// total split into any pieces, and over-releases.
func FuzzWeightedMatchesXSync(f *testing.F) {
	f.Add([]byte{1, 2, 0, 0, 3, 0, 0, 2, 1, 0, 0, 0, 0, 0, 3, 0, 1, 1, 0, 1})
	f.Add([]byte{6, 0, 0, 0, 2, 1, 0, 1, 1, 0, 1})
	f.Add([]byte{6, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 0, 3, 4, 0})
	f.Add([]byte{3, 2, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 0, 3, 4, 0})
	f.Add([]byte{4, 0, 0, 0, 2, 1, 0, 1, 1, 0, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 3, 0, 0, 2, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		size, zeroValue := fuzzSize(in.next(), in.next())
		synctest.Test(t, func(t *testing.T) {
			ours, theirs := semaphore.NewWeighted(size), xsem.NewWeighted(size)
			if zeroValue {
				ours, theirs = &semaphore.Weighted{}, &xsem.Weighted{}
			}
			var calls []*twin
			var held int64 // granted and not released, as both agree
			check := func(step int) {
				synctest.Wait()
				for i, c := range calls {
					errO, doneO := c.ours.finished()
					errT, doneT := c.theirs.finished()
					require.Equal(t, doneT, doneO, "step %d: call %d (n=%d) returned in one only", step, i, c.n)
					require.Equal(t, errT, errO, "step %d: call %d (n=%d)", step, i, c.n)
					if doneO && errO == nil && !c.counted {
						c.counted = true
						held += c.n
					}
				}
			}
			release := func(step int, n int64) {
				pT, pO := didPanic(func() { theirs.Release(n) }), didPanic(func() { ours.Release(n) })
				require.Equal(t, pT, pO, "step %d: Release(%d) with %d held: panicked in one only", step, n, held)
				require.False(t, pO, "step %d: Release(%d) with %d held", step, n, held)
				held -= n
			}
			for step := 0; len(in) > 0 && step < 48; step++ {
				op, a, b := in.next()%7, in.next(), in.next()
				switch op {
				case 0: // Acquire on a new goroutine
					n := fuzzWeight(a, b, size, held)
					calls = append(calls, &twin{n: n,
						ours:   startAcquire(t.Context(), ours, n),
						theirs: startAcquire(t.Context(), theirs, n)})
				case 1: // Release any part of what is held
					release(step, fuzzPiece(a, b, held))
				case 2: // cancel one call, wherever it stands
					if len(calls) == 0 {
						continue
					}
					cancelTwin(calls[int(a)%len(calls)], theirs)
				case 3: // TryAcquire, keeping what it takes
					n := fuzzWeight(a, b, size, held)
					var gotT, gotO bool
					pT := didPanic(func() { gotT = theirs.TryAcquire(n) })
					pO := didPanic(func() { gotO = ours.TryAcquire(n) })
					require.Equal(t, pT, pO, "step %d: TryAcquire(%d) panicked in one only", step, n)
					require.Equal(t, gotT, gotO, "step %d: TryAcquire(%d) with %d held", step, n, held)
					if gotO {
						held += n
					}
				case 4: // Acquire with a context that is already done
					ctx, cancel := context.WithCancel(t.Context())
					cancel()
					n := fuzzWeight(a, b, size, held)
					require.Equal(t, theirs.Acquire(ctx, n), ours.Acquire(ctx, n), "step %d: done Acquire(%d)", step, n)
				case 5: // over-release: both panic
					overRelease(t, step, ours, theirs, calls, size, held, int64(b%4))
				case 6: // Release(0) with waiters or not: changes nothing
					release(step, 0)
				}
				check(step)
			}
			// Wind down: cancel every call, one at a time (cancelling several at
			// once would let the order of their goroutines decide which of the
			// waiters behind them are granted first), return what is held in two
			// pieces, and require the whole size to be free in both.
			for _, c := range calls {
				cancelTwin(c, theirs)
				check(len(data))
			}
			release(len(data), held/3)
			release(len(data), held)
			require.True(t, theirs.TryAcquire(size))
			require.True(t, ours.TryAcquire(size), "units were lost")
			require.False(t, didPanic(func() { ours.Release(size) }))
			theirs.Release(size)
		})
	})
}

// overRelease releases held+1+k from both and requires both to panic. x/sync's
// count is wrong after its panic (it subtracted first); a TryAcquire of the same
// amount puts it back, which works only with nobody queued and when its
// size-count cannot overflow, so the step is skipped otherwise. This package must
// change nothing when it panics, which the steps after it check.
func overRelease(t *testing.T, step int, ours, theirs weighted, calls []*twin, size, held, k int64) {
	n := held + 1 + k
	if n <= 0 || n > math.MaxInt64-size+held {
		return
	}
	for _, c := range calls {
		if _, done := c.ours.finished(); !done && c.n <= size {
			return // queued
		}
	}
	require.True(t, didPanic(func() { theirs.Release(n) }), "step %d: x/sync Release(%d) with %d held", step, n, held)
	require.True(t, didPanic(func() { ours.Release(n) }), "step %d: Release(%d) with %d held", step, n, held)
	require.True(t, theirs.TryAcquire(n), "restoring x/sync's count")
}

// didPanic calls f and reports whether it panicked.
func didPanic(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}

// cancelTwin cancels both sides of a call. x/sync does not look at the queue
// when a cancelled head leaves while every unit is taken, so an n = 0 waiter
// behind it stays blocked until the next Release; this package grants it at
// once (a documented difference). Release(0) makes x/sync look, which changes
// nothing else: outside that case its head never fits.
func cancelTwin(c *twin, theirs weighted) {
	c.ours.cancel()
	c.theirs.cancel()
	synctest.Wait()
	theirs.Release(0)
}

var _ weighted = (*semaphore.Weighted)(nil)
