package adaptive_test

import (
	"context"
	"io"
	"net/http/httptest"
	"regexp"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/semdebug"
)

func TestDiagnostics_TellsTheLimitAgainstTheEstimateAndTheCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(4, semaphore.WithName("db")), &script{limit: 4}, adaptive.WithWindow(1, 0, 0))
		c, err := l.AcquireN(context.Background(), 2)
		require.NoError(t, err)
		assert.Equal(t, "db", l.Name())
		assert.Equal(t, `adaptive limiter "db" (*adaptive_test.script): limit 4, capacity estimate unknown, 2 units in flight, 0 calls waiting, usual round trip unknown
calls: 1 acquired, 0 succeeded, 0 dropped, 0 ignored, 0 shed (0 at once)
windows: 0, 0 raised the limit, 0 lowered it
critical: 0 units in flight, 0 waiting, 0 acquired, 0 shed (0 at once)
default: 2 units in flight, 0 waiting, 1 acquired, 0 shed (0 at once)
sheddable: 0 units in flight, 0 waiting, 0 acquired, 0 shed (0 at once)
`, l.Diagnostics(0))
		time.Sleep(3 * time.Millisecond) // the call's round trip, in the bubble's time
		c.Done(adaptive.Success)
		assert.Contains(t, l.Diagnostics(0), ", usual round trip 3ms\n", "the last window's mean round trip, once measured")
		e := adaptive.New(semaphore.New(8), nil, adaptive.WithName("<api>\n"))
		assert.Contains(t, e.Diagnostics(0), `adaptive limiter "<api>\n" (*adaptive.Capacity): limit 8, capacity estimate unknown, 0 units in flight`)
	})
}

// The debug page shows a Limiter by its name, its limit, in flight and
// waiters, each level among its details, and its dump.
func TestDiagnostics_ShowOnTheDebugPage(t *testing.T) {
	l := adaptive.New(semaphore.New(4), nil, adaptive.WithName("api"))
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
	row := regexp.MustCompile(`(?m)^\s*(\d+)\s+"api"`).FindStringSubmatch(get("/?format=text"))
	require.Len(t, row, 2, "a row for the limiter on the index")
	page := get("/" + row[1] + "?format=text")
	assert.Contains(t, page, `adaptive limiter "api" (*adaptive.Capacity): limit 4, capacity estimate unknown`)
	assert.Contains(t, page, "level sheddable")
	assert.Contains(t, get("/?format=text"), "adaptive limiter")
	runtime.KeepAlive(l) // the page holds it weakly: a collected limiter leaves it
}
