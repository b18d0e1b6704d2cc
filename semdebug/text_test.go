package semdebug

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), got)
}

// goldenRegistry registers a fixed set of sources, which the text form shows
// identically on every run inside a synctest bubble (its clock starts at
// 2000-01-01 UTC).
func goldenRegistry(t *testing.T) (*registry, []*fakeSource) {
	r := newRegistry()
	fakes := []*fakeSource{
		newFake("db", semaphore.Reading{Capacity: 8, Held: 8, Waiters: 3, Queued: 3, Acquired: 100,
			Holders: []semaphore.HolderGroup{
				{Site: "report.go:41", Label: "nightly-report", Holders: 1, Units: 6, Age: 3 * time.Minute},
				{Site: "query.go:12", Holders: 2, Units: 2, Age: 1500 * time.Millisecond},
			},
			Waiting: []semaphore.WaitingCall{{Units: 2, Waited: 12 * time.Second}, {Units: 1}, {Units: 1}},
			Details: []semaphore.Detail{{Name: "owner", Value: "reports team"}}}),
		newFake("cache", semaphore.Reading{Capacity: 4, Held: 1, Available: 3, Acquired: 50, OldestHolder: 250 * time.Millisecond}),
		newFake("cache", semaphore.Reading{Capacity: 2, Broken: true, Cause: "shutting down"}),
		newFake("", semaphore.Reading{Capacity: 1, Available: 1}),
	}
	for _, f := range fakes {
		t.Cleanup(registerKept(r, f))
	}
	return r, fakes
}

func TestText_IndexMatchesGolden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, fakes := goldenRegistry(t)
		h := newHandler(r)
		get(t, h, "/d/?format=text")
		time.Sleep(7 * time.Second) // nobody left db's wait list: its head waited at least this long
		fakes[1].set(func(s *semaphore.Reading) { s.Acquired += 35; s.TimedOut += 7; s.Rejected += 14; s.Shed += 7 })
		_, _, body := get(t, h, "/d/?format=text")
		golden(t, "index", body)
		_, _, body = get(t, h, "/d/?format=text&sort=capacity&desc=1")
		golden(t, "index-by-capacity", body)
	})
}

func TestText_ObjectMatchesGolden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := goldenRegistry(t)
		h := newHandler(r)
		get(t, h, "/d/1?format=text")
		time.Sleep(7 * time.Second)
		synctest.Wait() // the sampler's reading at 7s comes first
		_, _, body := get(t, h, "/d/1?format=text")
		golden(t, "object-stalled", body)
		_, _, body = get(t, h, "/d/3?format=text")
		golden(t, "object-broken", body)
		outlastSampling(t, r)
	})
}

// A Source's kind is its own text too: one that would break a row is quoted,
// a plain one is shown as it is.
func TestText_KindsThatWouldBreakARowAreQuoted(t *testing.T) {
	r := newRegistry()
	hostile := newFake("a", semaphore.Reading{})
	hostile.snap.Kind = "job\nSTALLED  99 \x1b[2J"
	plain := newFake("b", semaphore.Reading{})
	plain.snap.Kind = "job queue"
	defer registerKept(r, hostile)()
	defer registerKept(r, plain)()
	_, _, body := get(t, newHandler(r), "/d/?format=text")
	assert.Len(t, strings.Split(strings.TrimSpace(body), "\n"), 5, "a summary, a blank line, a header and two rows: %q", body)
	assert.Contains(t, body, `"job\nSTALLED  99 \x1b[2J"`)
	assert.Regexp(t, `"b" +job queue +0`, body)
	_, _, body = get(t, newHandler(r), "/d/1?format=text")
	assert.True(t, strings.HasPrefix(body, `"job\nSTALLED  99 \x1b[2J" "a" (id 1)`), body)
}
