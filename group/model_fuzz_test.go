package group_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/group"
)

// modelCall is one Go or TryGo call, in the group and in the model.
type modelCall struct {
	n       int64
	cancel  context.CancelFunc
	goErr   chan error        // Go's result
	started chan struct{}     // closed when the task starts
	finish  chan func() error // what the task does when let go
	// the model's view
	state string // "waiting", "running", "done", "refused"
}

// FuzzGroupModel drives a Group in a synctest bubble with a sequence of Go (on
// a new goroutine), TryGo, task completions (nil, error or panic) and
// cancellations of waiting Go calls, and checks after each step, once every
// goroutine is blocked, that the tasks running and the Go calls that returned
// are exactly those of a sequential model: a FIFO line of weighted requests
// over a fixed capacity, where a request is granted when it fits and nobody is
// ahead of it. At the end it checks Wait's result: the first panic, else the
// first error.
func FuzzGroupModel(f *testing.F) {
	f.Add([]byte{3, 0, 2, 0, 3, 1, 0, 2, 5, 3, 1, 2, 1})
	f.Add([]byte{2, 0, 1, 0, 2, 0, 1, 4, 1, 2, 0, 3, 2})
	f.Add([]byte{4, 1, 3, 0, 4, 0, 1, 3, 0, 2, 8, 2, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		capacity := int64(ops[0]%4) + 1
		ops = ops[1:]
		if len(ops) > 60 {
			ops = ops[:60]
		}
		synctest.Test(t, func(t *testing.T) {
			sem := semaphore.New(capacity)
			g := group.New(sem)
			var calls []*modelCall
			free := capacity
			var firstErr error
			var firstPanic any

			grant := func() { // the model's FIFO grants
				for _, c := range calls {
					if c.state != "waiting" {
						continue
					}
					if c.n > free {
						return // strict FIFO: nobody passes the head
					}
					free -= c.n
					c.state = "running"
				}
			}
			waitingAhead := func() bool {
				for _, c := range calls {
					if c.state == "waiting" {
						return true
					}
				}
				return false
			}
			newCall := func(n int64) *modelCall {
				c := &modelCall{n: n, goErr: make(chan error, 1), started: make(chan struct{}),
					finish: make(chan func() error, 1)}
				return c
			}
			task := func(c *modelCall) func() error {
				return func() error {
					close(c.started)
					return (<-c.finish)()
				}
			}
			check := func(step int) {
				synctest.Wait()
				for i, c := range calls {
					isStarted := closed(c.started)
					switch c.state {
					case "running", "done":
						require.True(t, isStarted, "step %d: call %d (n=%d) should have started", step, i, c.n)
					default:
						require.False(t, isStarted, "step %d: call %d (n=%d, %s) started", step, i, c.n, c.state)
					}
				}
				require.Equal(t, free, sem.Available(), "step %d: free units", step)
			}

			for step := 0; step+1 < len(ops); step += 2 {
				arg := int64(ops[step+1])
				switch ops[step] % 4 {
				case 0: // Go on a new goroutine
					c := newCall(arg % (capacity + 1))
					ctx, cancel := context.WithCancel(t.Context())
					c.cancel = cancel
					c.state = "waiting"
					calls = append(calls, c)
					go func() { c.goErr <- g.Go(ctx, c.n, task(c)) }()
					grant()
				case 1: // TryGo
					c := newCall(arg % (capacity + 1))
					c.cancel = func() {}
					ok := g.TryGo(c.n, task(c))
					want := !waitingAhead() && c.n <= free
					require.Equal(t, want, ok, "step %d: TryGo(%d)", step, c.n)
					if ok {
						free -= c.n
						c.state = "running"
					} else {
						c.state = "refused"
					}
					calls = append(calls, c)
				case 2: // let a running task finish: nil, an error or a panic
					var running []*modelCall
					for _, c := range calls {
						if c.state == "running" {
							running = append(running, c)
						}
					}
					if len(running) == 0 {
						continue
					}
					c := running[int(arg)%len(running)]
					synctest.Wait() // the task has started
					switch arg % 3 {
					case 0:
						c.finish <- func() error { return nil }
					case 1:
						err := fmt.Errorf("task %d", step)
						if firstErr == nil {
							firstErr = err
						}
						c.finish <- func() error { return err }
					case 2:
						v := fmt.Sprintf("panic %d", step)
						if firstPanic == nil {
							firstPanic = v
						}
						c.finish <- func() error { panic(v) }
					}
					c.state = "done"
					free += c.n
					grant()
				case 3: // cancel a waiting Go
					var waiting []*modelCall
					for _, c := range calls {
						if c.state == "waiting" {
							waiting = append(waiting, c)
						}
					}
					if len(waiting) == 0 {
						continue
					}
					c := waiting[int(arg)%len(waiting)]
					c.cancel()
					c.state = "refused"
					synctest.Wait()
					require.ErrorIs(t, <-c.goErr, context.Canceled, "step %d", step)
					grant()
				}
				check(step)
			}

			// Wind down: cancel the waiting calls, finish the running ones, and
			// check Wait's verdict.
			for _, c := range calls {
				if c.state == "waiting" {
					c.cancel()
					synctest.Wait()
					<-c.goErr
					c.state = "refused"
					grant()
				}
			}
			for _, c := range calls {
				if c.state == "running" {
					c.finish <- func() error { return nil }
				}
				c.cancel()
			}
			var p any
			var err error
			func() {
				defer func() { p = recover() }()
				err = g.Wait()
			}()
			if firstPanic != nil {
				var pe *group.PanicError
				require.True(t, errors.As(p.(error), &pe))
				require.Equal(t, firstPanic, pe.Value)
			} else {
				require.Nil(t, p)
				require.Equal(t, firstErr, err)
			}
			require.Equal(t, capacity, sem.Available())
		})
	})
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
