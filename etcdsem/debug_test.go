package etcdsem

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/hostile"
	"github.com/fairsem/semaphore/semdebug"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReading_ShowsABlockModeSemaphoresHandlesAndCallers(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	a := newSem(t, newClient(t, ep), name, WithCapacity(4), WithBlocks(2), WithClientName("worker-a"))
	b := newSem(t, newClient(t, ep), name, WithClientName("plain\nb <i>"))
	ctx := testCtx(t, 20*time.Second)
	u, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	ub, err := b.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(ub)
	_, err = a.Stats(ctx) // the mirror has caught up with both
	require.NoError(t, err)

	snap := a.Reading()
	assert.Equal(t, int64(4), snap.Capacity)
	assert.Equal(t, int64(4), snap.Held, "a's block of 2 and b's key of 2")
	assert.Equal(t, uint64(1), snap.Acquired, "a's callers' grants")
	labels := map[string]int64{}
	for _, h := range snap.Holders {
		labels[h.Label] = h.Units
	}
	assert.Equal(t, map[string]int64{"worker-a": 2, "plain\nb <i>": 2}, labels, "one holder group per handle")
	details := map[string]string{}
	for _, d := range snap.Details {
		details[d.Name] = d.Value
	}
	assert.Equal(t, "2", details["handles (processes)"])
	assert.Contains(t, details[`handle "worker-a"`], "1 block of 2 units")
	assert.Contains(t, details["this handle's callers"], "1 holder holding 1 unit")
	assert.Equal(t, "etcd semaphore, blocks of 2", snap.Kind)
	assert.Equal(t, name, snap.Name)
	notCounted := semaphore.QueuedField | semaphore.TimedOutField | semaphore.CancelledField | semaphore.RejectedField | semaphore.ShedField
	assert.Equal(t, notCounted, snap.Unknown, "what a handle does not count is unknown, not 0")
	assert.Equal(t, "etcd semaphore", b.Reading().Kind)
	assert.Equal(t, notCounted|semaphore.AcquiredField, b.Reading().Unknown, "a plain handle counts no grants")
	assert.NotContains(t, a.Diagnostics(0), "\nb <i>", "a hostile client name stays on its line")
	assert.Contains(t, a.Diagnostics(1), "1 more handles")

	defer semdebug.Register(a)()
	srv := httptest.NewServer(semdebug.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/?format=text")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(body), name), "the page lists the semaphore:\n%s", body)
	require.NoError(t, u.Release(ctx))
	require.NoError(t, ub.Release(ctx))
}

// Every process's callers, as its report gives them, are on the page of any
// handle; unknown stays "-".
func TestReading_ShowsEachProcesssReportedCallers(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	ctx := testCtx(t, 30*time.Second)
	hostile := strings.Repeat("<i>\n\"x\" ", 625) // 5,000 bytes
	viewer := newSem(t, newClient(t, ep), name, WithCapacity(3), WithClientName("viewer"))
	a := newSem(t, newClient(t, ep), name, WithBlocks(2), WithClientName("a"))
	b := newSem(t, newClient(t, ep), name, WithBlocks(1), WithClientName(hostile))
	var held []*Units
	for _, s := range []*Semaphore{a, a, b} {
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(u)
		held = append(held, u)
	}
	waiting := startWaiting(ctx, a, 1) // every unit is held: it waits in a's queue
	waitFor(t, "a's caller waits", func() bool { return localWaiters(a) == 1 })

	details := func() map[string]string {
		out := map[string]string{}
		for _, d := range viewer.Reading().Details {
			out[d.Name] = d.Value
		}
		return out
	}
	aWant := "callers of its blocks: 2 callers holding 2 units, 1 caller waiting for 1 unit, in blocks of 2 units, reported "
	bWant := "callers of its blocks: 1 caller holding 1 unit, 0 callers waiting for 0 units, in blocks of 1 unit, reported "
	var d map[string]string
	waitFor(t, "the viewer's page shows a's and b's reported callers", func() bool {
		d = details()
		return strings.Contains(d[`handle "a"`], aWant) && strings.Contains(d["handle "+strconv.Quote(hostile)], bWant)
	})
	assert.Contains(t, d[`handle "a"`], "1 block of 2 units")
	assert.Equal(t, "3 callers holding 3 units, 1 caller waiting for 1 unit, in blocks of 3 units, from 2 reports",
		d["callers of the handles' blocks, as reported"])
	diag := viewer.Diagnostics(0)
	assert.Contains(t, diag, `handle "a": 1 block of 2 units`)
	assert.Contains(t, diag, aWant)
	assert.Contains(t, diag, "as reported: 3 callers holding 3 units")
	assert.Equal(t, 4, strings.Count(diag, "\n"), "a header, the fleet's callers and one line per handle (a and b):\n%s", diag)

	require.NoError(t, viewer.Close())
	d = details()
	assert.Equal(t, "-", d["callers of the handles' blocks, as reported"], "no report read: unknown, not 0")
	assert.Contains(t, d[`handle "a"`], "callers of its blocks: -")

	for _, u := range held {
		require.NoError(t, u.Release(ctx))
	}
	u := <-waiting
	require.NotNil(t, u)
	log.add(u)
	require.NoError(t, u.Release(ctx))
}

// A Break's reason is a value a peer gives: every text that prints it quotes
// it (the dump, the errors), so that it stays one value on its line, and
// Reading gives it as it was given.
func TestReading_AndTheDumpQuoteTheReason(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	checkHistoryAtEnd(t, ep, name, &grantLog{})
	s := newSem(t, newClient(t, ep), name, WithCapacity(2))
	ctx := testCtx(t, 30*time.Second)
	plainLines := strings.Count(s.Diagnostics(0), "\n")
	for _, h := range hostile.Texts {
		require.NoError(t, s.Break(ctx, errors.New(h.Value)))
		waitFor(t, "the handle sees the break", func() bool { return s.Reading().Cause == h.Value })
		quoted := strconv.Quote(h.Value)
		dump := s.Diagnostics(0)
		assert.Contains(t, dump, ", broken: "+quoted+"\n", h.Name)
		assert.Equal(t, plainLines, strings.Count(dump, "\n"), "%s:\n%s", h.Name, dump)
		_, _, err := s.TryAcquire(ctx, 1)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "broken: "+quoted+": ", h.Name)
		assert.NotContains(t, err.Error(), "\n", h.Name)
		require.NoError(t, s.Repair(ctx))
		waitFor(t, "the handle sees the repair", func() bool { return !s.Reading().Broken })
	}
}
