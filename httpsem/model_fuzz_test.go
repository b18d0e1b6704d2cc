package httpsem_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/httpsem"
)

// modelRequest is one request, in the middleware and in the model.
type modelRequest struct {
	weight   int64
	cancel   context.CancelFunc
	started  chan struct{} // closed when the handler runs
	release  chan struct{} // closed to let the handler return
	done     chan struct{} // closed when ServeHTTP has returned
	rec      *httptest.ResponseRecorder
	deadline time.Time // end of its wait (WithTimeout)

	state      string // model: "waiting", "running", "done"
	code       int    // model: expected status once done
	retryAfter bool   // model: expected Retry-After
}

// FuzzLimitModel drives Limit in a synctest bubble (handlers called directly,
// time faked) with a sequence of requests of various weights (too large
// included), handlers finishing, clients canceling, time passing beyond the wait
// timeout, and Break, and requires after each step, once every goroutine is
// blocked, the outcome a sequential model predicts for every request: which
// handlers run (strict FIFO over the capacity, a backlog of at most 2) and what
// each refused request was answered (503, with Retry-After when busy). The
// deadline rule is off here: FuzzDeadlineRuleModel (package adaptive) is its
// model, and the door's tests (rule_test.go) check that Limit applies it.
func FuzzLimitModel(f *testing.F) {
	f.Add([]byte{2, 0, 1, 0, 2, 0, 1, 0, 1, 1, 0, 3, 0, 2, 0})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 3, 0, 1, 0, 4, 0, 1, 0})
	f.Add([]byte{3, 0, 3, 0, 1, 0, 2, 2, 0, 1, 0, 0, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		capacity := int64(ops[0]%3) + 1
		ops = ops[1:]
		if len(ops) > 50 {
			ops = ops[:50]
		}
		const backlog, timeout = 2, 10 * time.Second
		synctest.Test(t, func(t *testing.T) {
			sem := semaphore.New(capacity, semaphore.WithMaxWaiters(backlog))
			var reqs []*modelRequest
			h := httpsem.Limit(sem, httpsem.WithTimeout(timeout), httpsem.WithoutDeadlineShedding(),
				httpsem.WithWeight(func(r *http.Request) int64 { return model(r).weight }))(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					m := model(r)
					close(m.started)
					<-m.release
				}))
			free := capacity
			broken := false

			waiting := func() []*modelRequest {
				var ws []*modelRequest
				for _, m := range reqs {
					if m.state == "waiting" {
						ws = append(ws, m)
					}
				}
				return ws
			}
			refuse := func(m *modelRequest, retryAfter bool) {
				m.state, m.code, m.retryAfter = "done", http.StatusServiceUnavailable, retryAfter
			}
			grant := func() {
				for _, m := range waiting() {
					if m.weight > free {
						return
					}
					free -= m.weight
					m.state = "running"
				}
			}
			check := func(step int) {
				synctest.Wait()
				for i, m := range reqs {
					require.Equal(t, m.state != "waiting", closed(m.started) || closed(m.done),
						"step %d: request %d (weight %d, %s)", step, i, m.weight, m.state)
					if m.state == "done" {
						require.True(t, closed(m.done), "step %d: request %d not answered", step, i)
						require.Equal(t, m.code, m.rec.Code, "step %d: request %d", step, i)
						require.Equal(t, m.retryAfter, m.rec.Header().Get("Retry-After") != "", "step %d: request %d Retry-After", step, i)
					}
				}
				if !broken {
					require.Equal(t, free, sem.Available(), "step %d: units", step)
				}
			}

			for step := 0; step+1 < len(ops); step += 2 {
				arg := int64(ops[step+1])
				switch ops[step] % 5 {
				case 0: // a new request
					time.Sleep(time.Millisecond) // distinct deadlines: timeouts fire one at a time
					ctx, cancel := context.WithCancel(t.Context())
					m := &modelRequest{weight: arg % (capacity + 2), cancel: cancel,
						started: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{}),
						rec: httptest.NewRecorder(), deadline: time.Now().Add(timeout)}
					reqs = append(reqs, m)
					req := httptest.NewRequestWithContext(context.WithValue(ctx, modelKey{}, m), "GET", "/", nil)
					go func() {
						h.ServeHTTP(m.rec, req)
						close(m.done)
					}()
					switch {
					case broken || m.weight > capacity:
						refuse(m, false)
					case len(waiting()) == 0 && m.weight <= free:
						free -= m.weight
						m.state = "running"
					case len(waiting()) >= backlog:
						refuse(m, true)
					default:
						m.state = "waiting"
					}
				case 1: // a handler finishes
					var running []*modelRequest
					for _, m := range reqs {
						if m.state == "running" {
							running = append(running, m)
						}
					}
					if len(running) == 0 {
						continue
					}
					m := running[int(arg)%len(running)]
					close(m.release)
					m.state, m.code = "done", http.StatusOK
					if !broken {
						free += m.weight
						grant()
					}
				case 2: // a waiting client gives up
					ws := waiting()
					if len(ws) == 0 {
						continue
					}
					m := ws[int(arg)%len(ws)]
					m.cancel()
					refuse(m, true)
					grant()
				case 3: // time passes: waits past the timeout end, oldest first
					time.Sleep(4 * time.Second)
					for _, m := range waiting() {
						if m.state == "waiting" && !m.deadline.After(time.Now()) {
							refuse(m, true)
							grant()
						}
					}
				case 4: // Break
					if arg%3 != 0 {
						continue
					}
					sem.Break(nil)
					broken = true
					for _, m := range waiting() {
						refuse(m, false)
					}
				}
				check(step)
			}
			// Wind down: the waiting clients give up (one leaving may admit the
			// next before it gives up: no outcome is checked here), then every
			// handler that runs is let go.
			for _, m := range waiting() {
				m.cancel()
			}
			synctest.Wait()
			for _, m := range reqs {
				if closed(m.started) && !closed(m.release) {
					close(m.release)
				}
				m.cancel()
			}
			synctest.Wait()
		})
	})
}

type modelKey struct{}

func model(r *http.Request) *modelRequest { return r.Context().Value(modelKey{}).(*modelRequest) }

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
