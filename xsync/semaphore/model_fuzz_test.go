package semaphore_test

import (
	"context"
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

// twin is one call made identically on both implementations.
type twin struct {
	n        int64
	ours     *acquirer
	theirs   *acquirer
	released bool
}

// FuzzWeightedMatchesXSync runs one sequence of operations against this package
// and against golang.org/x/sync/semaphore in a synctest bubble, waiting after each
// step until every goroutine is blocked, and requires the two to agree on every
// outcome: which Acquire calls returned and with what error, and every TryAcquire.
// x/sync is the model; the operations cover queued and too-large waiters, grants,
// cancellations anywhere in the queue, n = 0 and done contexts.
func FuzzWeightedMatchesXSync(f *testing.F) {
	f.Add([]byte{3, 0, 2, 0, 3, 0, 1, 1, 0, 2, 0})
	f.Add([]byte{4, 3, 3, 0, 4, 0, 1, 2, 0, 1, 0, 1, 1})
	f.Add([]byte{2, 0, 3, 0, 2, 0, 1, 0, 2, 4, 0, 1, 0})
	f.Add([]byte{1, 3, 1, 0, 0, 0, 1, 2, 0, 1, 0, 3, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		size := int64(ops[0]%8) + 1
		ops = ops[1:]
		if len(ops) > 64 {
			ops = ops[:64]
		}
		synctest.Test(t, func(t *testing.T) {
			ours := semaphore.NewWeighted(size)
			theirs := xsem.NewWeighted(size)
			var calls []*twin
			check := func(step int) {
				synctest.Wait()
				for i, c := range calls {
					errO, doneO := c.ours.finished()
					errT, doneT := c.theirs.finished()
					require.Equal(t, doneT, doneO, "step %d: call %d (n=%d) returned in one only", step, i, c.n)
					require.Equal(t, errT, errO, "step %d: call %d (n=%d)", step, i, c.n)
				}
			}
			for step := 0; step+1 < len(ops); step += 2 {
				arg := int64(ops[step+1])
				switch ops[step] % 5 {
				case 0: // Acquire on a new goroutine; n up to size+1, too large included
					n := arg % (size + 2)
					calls = append(calls, &twin{n: n,
						ours:   startAcquire(t.Context(), ours, n),
						theirs: startAcquire(t.Context(), theirs, n)})
				case 1: // Release what one granted call holds
					held := heldCalls(calls)
					if len(held) == 0 {
						continue
					}
					c := held[int(arg)%len(held)]
					c.released = true
					ours.Release(c.n)
					theirs.Release(c.n)
				case 2: // cancel one call, wherever it stands
					if len(calls) == 0 {
						continue
					}
					c := calls[int(arg)%len(calls)]
					cancelTwin(c, theirs)
				case 3: // TryAcquire
					n := arg % (size + 2)
					got, want := ours.TryAcquire(n), theirs.TryAcquire(n)
					require.Equal(t, want, got, "step %d: TryAcquire(%d)", step, n)
					if got {
						ours.Release(n)
						theirs.Release(n)
					}
				case 4: // Acquire with a context that is already done
					ctx, cancel := context.WithCancel(t.Context())
					cancel()
					n := arg % (size + 2)
					require.Equal(t, theirs.Acquire(ctx, n), ours.Acquire(ctx, n), "step %d: done Acquire(%d)", step, n)
				}
				check(step)
			}
			// Wind down: cancel every call, one at a time (cancelling several at
			// once would let the order of their goroutines decide which of the
			// waiters behind them are granted first), return what is held, and
			// require the whole size to be free in both.
			for _, c := range calls {
				cancelTwin(c, theirs)
				check(len(ops))
			}
			for _, c := range heldCalls(calls) {
				ours.Release(c.n)
				theirs.Release(c.n)
			}
			require.True(t, theirs.TryAcquire(size))
			require.True(t, ours.TryAcquire(size), "units were lost")
		})
	})
}

// cancelTwin cancels both sides of a call. x/sync does not look at the queue
// when a cancelled head leaves while every unit is taken, so an n = 0 waiter
// behind it stays blocked until the next Release; this package grants it at
// once (a documented difference). Release(0) makes x/sync look, which changes
// nothing else: outside that case its head never fits.
func cancelTwin(c *twin, theirs *xsem.Weighted) {
	c.ours.cancel()
	c.theirs.cancel()
	synctest.Wait()
	theirs.Release(0)
}

// heldCalls returns the calls that were granted and not yet released, as seen
// in this package's results (the check has already required x/sync to agree).
func heldCalls(calls []*twin) []*twin {
	var held []*twin
	for _, c := range calls {
		if err, done := c.ours.finished(); done && err == nil && !c.released {
			held = append(held, c)
		}
	}
	return held
}

var _ weighted = (*semaphore.Weighted)(nil)
