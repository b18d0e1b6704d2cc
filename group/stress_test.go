package group_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/group"
)

var errTask = errors.New("task failed")

// TestStress_WeightsCancellationsErrorsAndPanics has several goroutines submit
// tasks of weights 0..4 to one group, with contexts that time out or are
// canceled while waiting, tasks that fail or panic now and then, and TryGo
// mixed in. Invariants: the weight running never exceeds the capacity, every
// task that started was admitted by a nil Go or a true TryGo and vice versa, a
// refused Go returns its context's error, Wait re-raises a panic if any task
// panicked and otherwise returns a task error if any failed, and afterwards
// every unit is back.
func TestStress_WeightsCancellationsErrorsAndPanics(t *testing.T) {
	const capacity = 6
	rounds, submitters, perSubmitter := 20, 4, 50
	if testing.Short() {
		rounds = 4
	}
	for round := range rounds {
		sem := semaphore.New(capacity)
		g := group.New(sem)
		var running, admitted, started, failed, panicked atomic.Int64
		var wg sync.WaitGroup
		for s := range submitters {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(round), uint64(s)))
				for range perSubmitter {
					n := r.Int64N(5)
					fate := r.IntN(20)
					task := func() error {
						started.Add(1)
						if now := running.Add(n); now > capacity {
							t.Errorf("weight %d running, capacity %d", now, capacity)
						}
						_ = spin(100 * (fate + 1))
						running.Add(-n)
						switch fate {
						case 0:
							failed.Add(1)
							return errTask
						case 1:
							panicked.Add(1)
							panic("task panic")
						}
						return nil
					}
					if fate == 2 {
						if g.TryGo(n, task) {
							admitted.Add(1)
						}
						continue
					}
					ctx, cancel := context.WithCancel(context.Background())
					switch fate % 3 {
					case 0:
						ctx, cancel = context.WithTimeout(context.Background(), time.Duration(r.IntN(100))*time.Microsecond)
					case 1:
						go cancel()
					}
					if err := g.Go(ctx, n, task); err != nil {
						if !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
							t.Errorf("Go: %v, ctx.Err() = %v", err, ctx.Err())
						}
					} else {
						admitted.Add(1)
					}
					cancel()
				}
			})
		}
		wg.Wait()
		var p any
		var err error
		func() {
			defer func() { p = recover() }()
			err = g.Wait()
		}()
		assert.Equal(t, admitted.Load(), started.Load(), "round %d", round)
		switch {
		case panicked.Load() > 0:
			require.IsType(t, &group.PanicError{}, p)
		case failed.Load() > 0:
			assert.Nil(t, p)
			assert.ErrorIs(t, err, errTask)
		default:
			assert.Nil(t, p)
			assert.NoError(t, err)
		}
		assert.Equal(t, int64(capacity), sem.Available(), "round %d: units leaked", round)
		assert.Zero(t, sem.Waiters())
	}
}
