package adaptive_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// FuzzLimiterModel drives a Limiter with the deadline rule off, in a synctest
// bubble, with a sequence of acquisitions of one or two units (which wait at
// most a millisecond), Done with each verdict, Release, and limits chosen by
// the sequence (every sampled call closes a window, and the script answers it
// with the next limit), and requires after each step what a sequential model
// predicts: which acquisitions are granted, the calls in flight, the
// semaphore's capacity and free units, and every counter of Stats. The rule is
// FuzzDeadlineRuleModel's.
func FuzzLimiterModel(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 3, 0, 2, 1, 4, 5, 0, 0, 0, 0, 6, 2})
	f.Add([]byte{0, 9, 0, 0, 0, 0, 1, 0, 2, 0, 3, 1, 0, 0})
	f.Add([]byte{5, 5, 1, 6, 5, 0, 5, 2, 1, 5, 4, 0, 5, 3, 2})
	f.Fuzz(func(t *testing.T, prog []byte) {
		synctest.Test(t, func(t *testing.T) {
			alg := &script{limit: 2}
			sem := semaphore.New(2)
			l := adaptive.New(sem, alg, adaptive.WithWindow(1, 0, 0), adaptive.WithoutDeadlineShedding())
			type held struct {
				c     *adaptive.Call
				units int
			}
			var calls []held
			units := func() (n int) {
				for _, h := range calls {
					n += h.units
				}
				return n
			}
			limit, want := 2, adaptive.Stats{Limit: 2}
			for i := 0; i < len(prog); i++ {
				op, arg := prog[i]%6, 0
				if i+1 < len(prog) {
					arg = int(prog[i+1])
				}
				switch op {
				case 0, 5: // acquire one unit, or two
					n := 1 + int(op)/5
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					c, err := l.AcquireN(ctx, int64(n))
					cancel()
					switch {
					case n > limit:
						require.ErrorIs(t, err, semaphore.ErrTooLarge, "step %d", i)
					case units()+n <= limit:
						require.NoError(t, err, "step %d: %d in flight under limit %d", i, units(), limit)
						calls = append(calls, held{c, n})
						want.Acquired++
						want.Levels[adaptive.Default].Acquired++
					default:
						require.ErrorIs(t, err, semaphore.ErrTimedOut, "step %d", i)
					}
				case 1, 2, 3: // Done(Success), Done(Dropped), Done(Ignore) of a call, then its next limit
					if len(calls) == 0 {
						continue
					}
					i++
					k := arg % len(calls)
					o := adaptive.Verdict(op - 1)
					next := 1 + arg%7
					alg.limits = append(alg.limits[:0], next)
					calls[k].c.Done(o)
					calls = append(calls[:k], calls[k+1:]...)
					switch o {
					case adaptive.Success:
						want.Succeeded++
					case adaptive.Dropped:
						want.Dropped++
					default:
						want.Ignored++
					}
					if o != adaptive.Ignore {
						want.Windows++
						if next > limit {
							want.Increases++
						} else if next < limit {
							want.Decreases++
						}
						limit = next
					}
					alg.limits = alg.limits[:0]
				case 4: // Release of a call
					if len(calls) == 0 {
						continue
					}
					i++
					k := arg % len(calls)
					calls[k].c.Release()
					calls[k].c.Release()
					calls = append(calls[:k], calls[k+1:]...)
					want.Ignored++
				}
				got := l.Stats()
				want.Limit, want.InFlight, want.LastChange = limit, units(), got.LastChange
				want.Levels[adaptive.Default].InFlight = units()
				want.Available = max(0, limit-units())
				require.Equal(t, want, got, "step %d", i)
				require.Equal(t, int64(limit), sem.Capacity())
				require.Equal(t, int64(max(0, limit-units())), sem.Available())
			}
			for _, h := range calls {
				h.c.Release()
			}
			require.Equal(t, sem.Capacity(), sem.Available())
		})
	})
}
