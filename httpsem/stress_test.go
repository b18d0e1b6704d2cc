package httpsem_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/httpsem"
)

// TestStress_WeightsTimeoutsAndDisconnects sends many concurrent requests of
// weights 1..3 through Limit on a bounded backlog with a wait timeout, while some
// clients give up at random moments. Invariants: the weight in flight never
// exceeds the capacity, every answer is 200 or the overload status, and at the
// end every unit is back and nobody waits.
func TestStress_WeightsTimeoutsAndDisconnects(t *testing.T) {
	const capacity = 4
	requests := 300
	if testing.Short() {
		requests = 60
	}
	sem := semaphore.New(capacity, semaphore.WithMaxWaiters(8))
	var inFlight atomic.Int64
	weight := func(r *http.Request) int64 {
		n, _ := strconv.ParseInt(r.URL.Query().Get("w"), 10, 64)
		return n
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := weight(r)
		if now := inFlight.Add(n); now > capacity {
			t.Errorf("%d units in flight, capacity %d", now, capacity)
		}
		for range rand.IntN(1000) { // a little work, of varying length
			_ = rand.Int()
		}
		inFlight.Add(-n)
		io.WriteString(w, "ok")
	})
	srv := serve(t, httpsem.Limit(sem, httpsem.WithWeight(weight), httpsem.WithTimeout(time.Millisecond))(h))

	var wg sync.WaitGroup
	var ok, refused, gaveUp atomic.Int64
	for i := range requests {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%5 == 0 {
				go cancel() // a client that gives up at some moment
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/?w="+strconv.Itoa(1+i%3), nil)
			resp, err := srv.client.Do(req)
			if err != nil {
				gaveUp.Add(1)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				ok.Add(1)
			case http.StatusServiceUnavailable:
				refused.Add(1)
			default:
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return sem.Waiters() == 0 && sem.Available() == capacity },
		patience, time.Millisecond, "%v", sem)
	assert.Positive(t, ok.Load())
	t.Logf("%d ok, %d refused, %d gave up", ok.Load(), refused.Load(), gaveUp.Load())
}
