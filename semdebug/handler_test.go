package semdebug

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHandler_ServesEveryViewInEveryFormat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		defer registerKept(r, newFake("f", semaphore.Reading{Capacity: 2}))()
		h := newHandler(r)
		for _, tc := range []struct {
			path, ctype, contains string
		}{
			{"/debug/semaphores/", "text/html; charset=utf-8", `<table id="index">`},
			{"/debug/semaphores/?format=html", "text/html; charset=utf-8", `<table id="index">`},
			{"/debug/semaphores/?format=json", "application/json", `"objects": [`},
			{"/debug/semaphores/?format=text", "text/plain; charset=utf-8", "1 objects, 0 stalled"},
			{"/debug/semaphores/1", "text/html; charset=utf-8", `<pre id="diagnostics">dump of f`},
			{"/debug/semaphores/1?format=json", "application/json", `"diagnostics": "dump of f\n"`},
			{"/debug/semaphores/1?format=text", "text/plain; charset=utf-8", "diagnostics:\ndump of f\n"},
		} {
			code, ctype, body := get(t, h, tc.path)
			assert.Equal(t, http.StatusOK, code, tc.path)
			assert.Equal(t, tc.ctype, ctype, tc.path)
			assert.Contains(t, body, tc.contains, tc.path)
		}
		outlastSampling(t, r)
	})
}

func TestHandler_RefusesWhatItDoesNotServe(t *testing.T) {
	r := newRegistry()
	h := newHandler(r)
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{http.MethodPost, "/d/", http.StatusMethodNotAllowed},
		{http.MethodGet, "/d/?format=xml", http.StatusBadRequest},
		{http.MethodGet, "/d/7", http.StatusNotFound},
		{http.MethodGet, "/d/db", http.StatusNotFound},
		{http.MethodGet, "/d/-1", http.StatusNotFound},
		{http.MethodGet, "/d/99999999999999999999999", http.StatusNotFound},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		assert.Equal(t, tc.code, rec.Code, "%s %s", tc.method, tc.path)
	}
	unregister := registerPtr(r, semaphore.New(1))
	unregister()
	code, _, _ := get(t, h, "/d/1")
	assert.Equal(t, http.StatusNotFound, code, "an unregistered object's page is gone")
}

func TestHandler_ImportingRegistersNothingOnTheDefaultMux(t *testing.T) {
	for _, path := range []string{"/debug/semaphores/", "/debug/semaphores", "/debug/"} {
		_, pattern := http.DefaultServeMux.Handler(httptest.NewRequest(http.MethodGet, path, nil))
		assert.Empty(t, pattern, path)
	}
}

func TestHandler_HostileNamesCannotInjectMarkup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
		r := newRegistry()
		f := newFake(hostile, semaphore.Reading{
			Waiters: 1, Queued: 1,
			Holders: []semaphore.HolderGroup{{Site: hostile, Label: hostile, Holders: 1, Units: 1, Age: time.Second}},
			Waiting: []semaphore.WaitingCall{{Units: 1}},
			Details: []semaphore.Detail{{Name: hostile, Value: hostile}},
		})
		f.snap.Kind = hostile
		f.dump = hostile
		defer registerKept(r, f)()
		h := newHandler(r)
		for _, path := range []string{"/d/", "/d/1", "/d/?sort=" + "%3Cscript%3E"} {
			_, _, body := get(t, h, path)
			for _, raw := range []string{"<script>alert", "<img"} {
				assert.NotContains(t, body, raw, path)
			}
			assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", path)
		}
		outlastSampling(t, r)
	})
}

func TestHandler_HostileNamesCannotForgeTextRows(t *testing.T) {
	r := newRegistry()
	defer registerKept(r, newFake("a\nSTALLED  99  \"db\"\x1b[2J", semaphore.Reading{}))()
	_, _, body := get(t, newHandler(r), "/d/?format=text")
	lines := strings.Split(strings.TrimSpace(body), "\n")
	assert.Len(t, lines, 4, "a summary, a blank line, a header and one row: %q", body)
	assert.NotContains(t, body, "\x1b")
	assert.Contains(t, body, `"a\nSTALLED  99  \"db\"\x1b[2J"`)
}

func TestHandler_JSONCarriesTheReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		f := newFake("db", semaphore.Reading{Capacity: 4, Held: 3, Available: 1, Waiters: 2, Queued: 5,
			HeadWait: 7 * time.Second, OldestHolder: 9 * time.Second, Broken: true, Cause: "gone",
			Acquired: 10, TimedOut: 2, Cancelled: 3, Rejected: 4, Shed: 1,
			Holders: []semaphore.HolderGroup{{Site: "a.go:1", Label: "w1", Holders: 2, Units: 3, Age: 9 * time.Second}},
			Waiting: []semaphore.WaitingCall{{Units: 1, Waited: 7 * time.Second}, {Units: 2}},
			Details: []semaphore.Detail{{Name: "k", Value: "v"}}})
		defer registerKept(r, f)()
		h := newHandler(r, WithStallThreshold(time.Second))
		_, _, body := get(t, h, "/d/?format=json")
		var idx struct {
			Stalled              int               `json:"stalled"`
			StallThresholdSecond float64           `json:"stall_threshold_seconds"`
			Objects              []json.RawMessage `json:"objects"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &idx))
		require.Len(t, idx.Objects, 1)
		assert.Equal(t, 1, idx.Stalled)
		assert.Equal(t, 1.0, idx.StallThresholdSecond)
		assert.JSONEq(t, `{"id": 1, "key": "db", "name": "db", "kind": "fake", "stalled": true, "unlimited": false,
			"capacity": 4, "in_use": 3, "available": 1, "waiters": 2, "head_wait_seconds": 7,
			"head_wait_is_lower_bound": false, "oldest_holder_seconds": 9, "broken": true, "cause": "gone",
			"acquired": 10, "queued": 5, "timed_out": 2, "cancelled": 3, "rejected": 4, "shed": 1,
			"acquired_per_second": null, "timed_out_per_second": null, "cancelled_per_second": null,
			"rejected_per_second": null, "shed_per_second": null}`, string(idx.Objects[0]))

		time.Sleep(2 * time.Second)
		f.set(func(s *semaphore.Reading) { s.Acquired = 20 })
		_, _, body = get(t, h, "/d/1?format=json")
		var obj jsonObject
		require.NoError(t, json.Unmarshal([]byte(body), &obj))
		require.NotNil(t, obj.AcquiredPerSecond)
		assert.Equal(t, 5.0, *obj.AcquiredPerSecond)
		assert.Equal(t, []jsonHolder{{"a.go:1", "w1", 2, 3, 9}}, obj.Holders)
		assert.Equal(t, []jsonWaiter{{1, 7}, {2, 0}}, obj.WaitList)
		assert.Equal(t, []jsonDetail{{"k", "v"}}, obj.Details)
		assert.Equal(t, "dump of db\n", obj.Diagnostics)
		outlastSampling(t, r)
	})
}

func TestHandler_ObjectPageChartsTheSampledHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		f := newFake("db", semaphore.Reading{Capacity: 4, Held: 1})
		defer registerKept(r, f)()
		h := newHandler(r)
		_, _, body := get(t, h, "/d/1")
		assert.Contains(t, body, `id="chart-inuse" data-points="0"`, "nothing was sampled before the page was opened")
		for i := range 5 {
			f.set(func(s *semaphore.Reading) { s.Held = int64(i) })
			time.Sleep(time.Second)
			synctest.Wait()
		}
		_, _, body = get(t, h, "/d/1")
		for _, id := range []string{"chart-inuse", "chart-waiters", "chart-headwait"} {
			assert.Contains(t, body, `id="`+id+`" data-points="6"`)
		}
		assert.Contains(t, body, "<polyline points=")
		outlastSampling(t, r)
	})
}

func TestHandler_ShowsARealSemaphoresHoldersAndStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		s := semaphore.New(2, semaphore.WithName("db"), semaphore.WithHolderTracking())
		defer registerKept(r, s)()
		u, err := s.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), "nightly-report"), 2)
		require.NoError(t, err)
		done := make(chan error)
		go func() { done <- s.Acquire(context.Background(), 1) }()
		synctest.Wait()
		h := newHandler(r, WithStallThreshold(time.Second))
		get(t, h, "/d/")
		time.Sleep(2 * time.Second)
		_, _, body := get(t, h, "/d/?format=text")
		assert.Contains(t, body, "STALLED  1")
		assert.Regexp(t, `1 +2s +2s +no`, body, "with holder tracking the head wait and the holder's age are exact")
		_, _, body = get(t, h, "/d/1")
		assert.Contains(t, body, `id="stalled"`)
		assert.Contains(t, body, "&#34;nightly-report&#34; (handler_test.go:")
		u.Release()
		require.NoError(t, <-done)
		s.Release(1)
		outlastSampling(t, r)
	})
}

// Without holder tracking the semaphore does not know its head's wait: the page
// shows the lower bound it has watched, and no holder's age.
func TestHandler_UntrackedSemaphoreShowsTheWatchedLowerBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		s := semaphore.New(1, semaphore.WithName("db"))
		defer registerKept(r, s)()
		require.NoError(t, s.Acquire(context.Background(), 1))
		done := make(chan error)
		go func() { done <- s.Acquire(context.Background(), 1) }()
		synctest.Wait()
		h := newHandler(r, WithStallThreshold(time.Second))
		get(t, h, "/d/")
		time.Sleep(2 * time.Second)
		_, _, body := get(t, h, "/d/?format=text")
		assert.Contains(t, body, ">=2s")
		s.Release(1)
		require.NoError(t, <-done)
		s.Release(1)
		outlastSampling(t, r)
	})
}

func TestHandler_HTMLIndexShowsTheFirstRowsAndLinksToAll(t *testing.T) {
	r := newRegistry()
	for i := range 5 {
		snap := semaphore.Reading{Capacity: int64(i)}
		if i == 4 {
			snap.Waiters, snap.HeadWait = 1, time.Hour
		}
		defer registerKept(r, newFake(string(rune('a'+i)), snap))()
	}
	h := newHandler(r)
	_, _, body := get(t, h, "/d/?limit=2&sort=capacity")
	assert.Equal(t, 2, strings.Count(body, `<tr id="row-`))
	assert.Contains(t, body, `<tr id="row-5" data-key="e" data-stalled="true" class="stalled">`, "the stalled row is shown first")
	assert.Contains(t, body, `3 more rows not shown: <a href="?limit=0&amp;sort=capacity">show all</a>`)
	for _, q := range []string{"?limit=0", "?limit=-1", "?limit=x", ""} {
		_, _, body = get(t, h, "/d/"+q)
		assert.Equal(t, 5, strings.Count(body, `<tr id="row-`), q)
		assert.NotContains(t, body, `id="hidden"`, q)
	}
	_, _, body = get(t, h, "/d/?format=text&limit=1")
	assert.Equal(t, 5, strings.Count(body, `"`)/2, "the text form lists every row")
}

func TestHandler_ShowsAdmissionControllersAndGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		c := admission.New(admission.Resources{Count: 2, Memory: 1 << 20}, admission.WithName("reads"))
		g := admission.NewGroup(admission.Resources{Count: 2, Memory: 1 << 20}, admission.WithName("tenants"))
		g.Add("gold", 3)
		defer registerKept(r, c)()
		defer registerKept(r, g)()
		h := newHandler(r)
		_, _, body := get(t, h, "/d/?format=text")
		assert.Contains(t, body, `"reads"    admission controller  2`)
		assert.Contains(t, body, `"tenants"  admission group       2`)
		_, _, body = get(t, h, "/d/2")
		assert.Contains(t, body, `member &#34;gold&#34;`)
		assert.Contains(t, body, `<pre id="diagnostics">`)
		outlastSampling(t, r)
	})
}

func TestHandler_AnswersHEAD(t *testing.T) {
	rec := httptest.NewRecorder()
	newHandler(newRegistry()).ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/d/", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
}

// Every response, in every format and on every error, tells the browser not to
// guess its type and to run nothing but the page's own files.
func TestHandler_EveryResponseSendsNosniffAndTheCSP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		defer registerKept(r, newFake("f", semaphore.Reading{}))()
		h := newHandler(r)
		for _, tc := range []struct {
			method, path string
			code         int
		}{
			{http.MethodGet, "/d/", 200}, {http.MethodGet, "/d/?format=json", 200}, {http.MethodGet, "/d/?format=text", 200},
			{http.MethodGet, "/d/1", 200}, {http.MethodGet, "/d/1?format=json", 200}, {http.MethodGet, "/d/1?format=text", 200},
			{http.MethodGet, "/d/page.css", 200}, {http.MethodGet, "/d/page.js", 200}, {http.MethodHead, "/d/", 200},
			{http.MethodGet, "/d/9", 404}, {http.MethodGet, "/d/x", 404}, {http.MethodGet, "/d/?format=xml", 400},
			{http.MethodPost, "/d/", 405},
		} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			assert.Equal(t, tc.code, rec.Code, "%s %s", tc.method, tc.path)
			assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), "%s %s", tc.method, tc.path)
			assert.Equal(t, "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'",
				rec.Header().Get("Content-Security-Policy"), "%s %s", tc.method, tc.path)
		}
		outlastSampling(t, r)
	})
}

// The pages hold no inline script or style, which the policy would block: they
// link the handler's own files, which it serves with their types.
func TestHandler_PagesUseNothingInline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		defer registerKept(r, newFake("f", semaphore.Reading{Capacity: 1}))()
		h := newHandler(r)
		inline := regexp.MustCompile(`<script>|<style|\sstyle=|\son[a-z]+=|javascript:`)
		for _, path := range []string{"/d/", "/d/1"} {
			_, _, body := get(t, h, path)
			assert.NotRegexp(t, inline, body, path)
			assert.Contains(t, body, `<link rel="stylesheet" href="page.css">`, path)
			assert.Contains(t, body, `<script src="page.js"></script>`, path)
		}
		for path, ctype := range map[string]string{"/d/page.css": "text/css; charset=utf-8", "/d/page.js": "text/javascript; charset=utf-8"} {
			code, got, body := get(t, h, path)
			assert.Equal(t, http.StatusOK, code, path)
			assert.Equal(t, ctype, got, path)
			assert.NotEmpty(t, body, path)
		}
		outlastSampling(t, r)
	})
}

// A long name is cut on the index, which must stay readable, and shown whole in
// the cell's title and on the object's page.
func TestHandler_LongNamesAreCutOnTheIndexOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := strings.Repeat("n", 5000)
		r := newRegistry()
		f := newFake(long, semaphore.Reading{})
		f.snap.Kind = strings.Repeat("k", 5000)
		defer registerKept(r, f)()
		h := newHandler(r)
		_, _, body := get(t, h, "/d/")
		assert.Contains(t, body, `<a href="1">`+strings.Repeat("n", shortLen-1)+"…</a>")
		assert.Contains(t, body, `<td class="name" title="`+long+`">`)
		assert.Contains(t, body, `<td class="kind" title="`+f.snap.Kind+`">`+strings.Repeat("k", shortLen-1)+"…</td>")
		assert.Equal(t, 2, strings.Count(body, long), "whole only in the row's data-key and the cell's title")
		_, _, body = get(t, h, "/d/1")
		assert.Contains(t, body, "<h1>"+f.snap.Kind+" "+long+"</h1>")
		outlastSampling(t, r)
	})
}

// A semaphore lists its holders and waiters in its dump, not in its snapshot:
// its page says nothing of them but the dump, which lists them.
func TestHandler_TrackedSemaphoreShowsItsHoldersInTheDumpOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistry()
		s := semaphore.New(2, semaphore.WithName("db"), semaphore.WithHolderTracking())
		defer registerKept(r, s)()
		u, err := s.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), "nightly-report"), 1)
		require.NoError(t, err)
		_, _, body := get(t, newHandler(r), "/d/1")
		assert.NotContains(t, body, "Not listed")
		assert.NotContains(t, body, "<h2>Holders</h2>")
		assert.Regexp(t, `(?s)<pre id="diagnostics">.*holders \(1, 1 unit\).*nightly-report`, body)
		u.Release()
		outlastSampling(t, r)
	})
}

// A name with line breaks and markup shows as text: escaped in HTML, quoted in
// the text form, where it stays on its row.
func TestHandler_NamesWithNewlinesAndMarkupShowAsText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const name = "db\n<b>pool</b>\r\n\"x\""
		r := newRegistry()
		defer registerKept(r, newFake(name, semaphore.Reading{Capacity: 1}))()
		h := newHandler(r)
		_, _, body := get(t, h, "/d/")
		assert.Contains(t, body, `<a href="1">db
&lt;b&gt;pool&lt;/b&gt;`)
		assert.Contains(t, body, "title=\"db\n&lt;b&gt;pool&lt;/b&gt;\r\n&#34;x&#34;\"", "in a quoted attribute a line break is text")
		assert.NotContains(t, body, "<b>")
		_, _, body = get(t, h, "/d/?format=text")
		assert.Contains(t, body, `"db\n<b>pool</b>\r\n\"x\""  fake`)
		assert.Len(t, strings.Split(strings.TrimSpace(body), "\n"), 4)
		outlastSampling(t, r)
	})
}
