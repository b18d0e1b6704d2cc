package adaptive_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/semdebug"
)

// estimating is a script that also estimates the capacity.
type estimating struct {
	script
	estimate int
}

func (e *estimating) Estimate() int { return e.estimate }

// busyLimiter returns a Limiter of limit 4 on a semaphore named "db", whose
// algorithm estimates 6, with 3 units in flight and a call for 2 waiting. The
// test ends the calls.
func busyLimiter(t *testing.T) (*adaptive.Limiter, *adaptive.Call, <-chan error) {
	t.Helper()
	sem := semaphore.New(4, semaphore.WithName("db"))
	l := adaptive.New(sem, &estimating{script: script{limit: 4}, estimate: 6}, adaptive.WithWindow(1, 0, 0))
	first, err := l.Acquire(context.Background())
	require.NoError(t, err)
	first.Done(adaptive.Success) // closes a window: the estimate is known
	held, err := l.AcquireN(context.Background(), 3)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		c, err := l.AcquireN(context.Background(), 2)
		if err == nil {
			c.Release()
		}
		waited <- err
	}()
	require.Eventually(t, func() bool { return sem.Waiters() == 1 }, 10*time.Second, time.Millisecond)
	return l, held, waited
}

// A Limiter reads its limit as the capacity, its units in flight as held, its
// gate's waiters, and the estimate among its details.
func TestReading_ShowsTheLimitTheUnitsInFlightTheWaitersAndTheEstimate(t *testing.T) {
	l, held, waited := busyLimiter(t)
	r := l.Reading()
	assert.Equal(t, "adaptive limiter", r.Kind)
	assert.Equal(t, "db", r.Name)
	assert.Equal(t, int64(4), r.Capacity)
	assert.Equal(t, int64(3), r.Held)
	assert.Equal(t, int64(1), r.Available)
	assert.Equal(t, 1, r.Waiters)
	assert.Equal(t, uint64(1), r.Queued)
	assert.Equal(t, uint64(2), r.Acquired)
	assert.Equal(t, semaphore.TimedOutField|semaphore.CancelledField|semaphore.RejectedField, r.Unknown,
		"what the Limiter does not count is unknown, not 0")
	assert.Contains(t, r.Details, semaphore.Detail{Name: "capacity estimate", Value: "6"})
	assert.Contains(t, r.Details, semaphore.Detail{Name: "level critical", Value: "0 units in flight, 0 waiting, 0 acquired, 0 shed (0 at once)"})
	assert.Contains(t, r.Details, semaphore.Detail{Name: "shed at once", Value: "0"})
	assert.Contains(t, r.Details, semaphore.Detail{Name: "waits on", Value: `semaphore "db"`})
	held.Done(adaptive.Success)
	require.NoError(t, <-waited)
	assert.Zero(t, l.Reading().Held)
}

// Units admitted by something else and measured with Start are in flight: held,
// though the Limiter's own gate never saw them.
func TestReading_CountsTheUnitsOfStartedCallsAsHeld(t *testing.T) {
	l := adaptive.New(adaptive.ResizeFunc(func(int64) {}), &script{limit: 5})
	c := l.Start(2, 0)
	r := l.Reading()
	assert.Equal(t, int64(5), r.Capacity)
	assert.Equal(t, int64(2), r.Held)
	assert.Contains(t, r.Details, semaphore.Detail{Name: "waits on", Value: "its own semaphore"})
	c.Done(adaptive.Success)
	assert.Zero(t, l.Reading().Held)
}

// A broken gate breaks the Limiter's reading, with the cause as given.
func TestReading_ShowsTheGatesBreak(t *testing.T) {
	sem := semaphore.New(2)
	l := adaptive.New(sem, &script{limit: 2})
	sem.Break(errors.New("closing"))
	r := l.Reading()
	assert.True(t, r.Broken)
	assert.Equal(t, "closing", r.Cause)
	assert.Zero(t, r.Available)
}

// The debug page shows a Limiter's limit, estimate, units in flight and
// waiters, read through its Reading.
func TestReading_ShowsOnTheDebugPage(t *testing.T) {
	l, held, waited := busyLimiter(t)
	defer semdebug.Register(l)()
	srv := httptest.NewServer(semdebug.Handler())
	defer srv.Close()
	get := func(path string) string {
		resp, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}
	row := regexp.MustCompile(`(?m)^\s*(\d+)\s+"db"\s+adaptive limiter\s+4\s+3\s+1\s+1\s`).FindStringSubmatch(get("/?format=text"))
	require.Len(t, row, 2, "the index shows its capacity, in use, available and waiters")
	page := get("/" + row[1] + "?format=text")
	for _, line := range []string{`(?m)^capacity +4$`, `(?m)^in use +3$`, `(?m)^waiters +1$`, `(?m)^capacity estimate +6$`,
		`(?m)^timed out +- `} {
		assert.Regexp(t, line, page)
	}
	held.Done(adaptive.Success)
	require.NoError(t, <-waited)
	runtime.KeepAlive(l) // the page holds it weakly
}
