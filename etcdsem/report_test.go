package etcdsem

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// reportOf returns the report Stats shows for the handle labelled client.
func reportOf(t *testing.T, s *Semaphore, client string) (Report, bool) {
	t.Helper()
	st, err := s.Stats(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	for _, r := range st.Reports {
		if r.Client == client {
			return r, true
		}
	}
	return Report{}, false
}

// startWaiting starts an Acquire of n units on s that waits; its result
// comes on the channel.
func startWaiting(ctx context.Context, s *Semaphore, n int64) chan *Units {
	got := make(chan *Units, 1)
	go func() {
		u, _ := s.Acquire(ctx, n)
		got <- u
	}()
	return got
}

func TestReports_EachBlockModeHandleReportsItsCallers(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	ctx := testCtx(t, 30*time.Second)
	plain := newSem(t, newClient(t, ep), name, WithCapacity(6), WithClientName("plain"))
	a := newSem(t, newClient(t, ep), name, WithBlocks(3), WithClientName("a"))
	b := newSem(t, newClient(t, ep), name, WithBlocks(1), WithClientName("b"))

	up, err := plain.Acquire(ctx, 2)
	require.NoError(t, err)
	log.add(up)
	var held []*Units
	for _, s := range []*Semaphore{a, a, a, b} {
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		log.add(u)
		held = append(held, u)
	}
	// The capacity is taken: a's next two callers wait.
	w1, w2 := startWaiting(ctx, a, 1), startWaiting(ctx, a, 1)
	waitFor(t, "a's two callers wait", func() bool { return localWaiters(a) == 2 })

	waitFor(t, "a reports 3 callers holding and 2 waiting", func() bool {
		r, ok := reportOf(t, plain, "a")
		return ok && r.Holders == 3 && r.Held == 3 && r.Waiters == 2 && r.Awaited == 2 && r.Blocks == 3
	})
	waitFor(t, "b reports its caller", func() bool {
		r, ok := reportOf(t, plain, "b")
		return ok && r.Holders == 1 && r.Held == 1 && r.Waiters == 0 && r.Blocks == 1
	})
	st, err := plain.Stats(ctx)
	require.NoError(t, err)
	assert.Len(t, st.Reports, 2, "a plain handle writes no report")
	for _, r := range st.Reports {
		for _, e := range st.Holders {
			if e.Client == r.Client {
				assert.Equal(t, e.Lease, r.Lease, "a report names the lease of its handle's blocks")
			}
		}
		assert.GreaterOrEqual(t, r.Acquired, uint64(1))
		assert.Less(t, r.Age, time.Minute)
	}

	require.NoError(t, up.Release(ctx))
	for _, w := range []chan *Units{w1, w2} {
		u := <-w
		require.NotNil(t, u, "the waiter is served once plain's units come free")
		log.add(u)
		held = append(held, u)
	}
	waitFor(t, "a's report follows its callers", func() bool {
		r, ok := reportOf(t, plain, "a")
		return ok && r.Holders == 5 && r.Held == 5 && r.Waiters == 0 && r.Awaited == 0 && r.Acquired == 5
	})

	require.NoError(t, a.Close())
	r, ok := reportOf(t, plain, "a")
	assert.False(t, ok, "Close revoked a's lease, and its report with it: %+v", r)
	_, ok = reportOf(t, plain, "b")
	assert.True(t, ok, "b's report stays")
	for _, u := range held {
		require.NoError(t, u.Release(ctx))
	}
}

// A report is outside the state's range: writing it moves no handle's mirror.
func TestReports_DoNotReachTheWatches(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	ctx := testCtx(t, 20*time.Second)
	cli := newClient(t, ep)
	watcher := newSem(t, newClient(t, ep), name, WithCapacity(1))
	a := newSem(t, newClient(t, ep), name, WithBlocks(1), WithClientName("a"))
	u, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)

	// Read with a client of its own: a Stats would move the handles' mirrors
	// to the revision it read at. A report of the holder is written after a's
	// block was.
	var written int64
	waitFor(t, "a reports its holder", func() bool {
		resp, err := cli.Get(ctx, a.rprefix, clientv3.WithPrefix())
		require.NoError(t, err)
		if len(resp.Kvs) == 0 {
			return false
		}
		r, ok := parseReport(resp.Kvs[0].Value, time.Now())
		written = resp.Kvs[0].ModRevision
		return ok && r.Holders == 1
	})
	mirrorRev := func(s *Semaphore) int64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.q.rev
	}
	// Nothing but the report was written at its revision or since: a watch
	// that saw it would move its mirror there within a few milliseconds.
	assert.Never(t, func() bool { return mirrorRev(watcher) >= written || mirrorRev(a) >= written },
		300*time.Millisecond, 5*time.Millisecond, "a report reached a watch")
	require.NoError(t, u.Release(ctx))
}

func TestParseReport_AValueThisPackageDidNotWriteIsNoReport(t *testing.T) {
	now := time.Unix(100, 0)
	for _, v := range []string{
		"",
		"garbage",
		"1 2 3 4 5 6 7",  // no label field
		"1 2 3 4 5 x 7 ", // not a number
		"-1 2 3 4 5 6 7 label",
		"1 2 3 4 5 6 99999999999999999999 label",
		"<b>1</b> 2 3 4 5 6 7 label",
		"1\n2 3 4 5 6 7 8 label",
	} {
		_, ok := parseReport([]byte(v), now)
		assert.False(t, ok, "%q", v)
	}
}

func TestParseReport_ReadsWhatFormatReportWrote(t *testing.T) {
	written := time.Unix(90, 5)
	hostile := strings.Repeat("<i>\n \"x\" ", 500) // 5,000 bytes of markup, newlines and spaces
	for _, client := range []string{"", "worker-1", hostile} {
		c := callers{holders: 3, held: 4, waiters: 2, awaited: 5, blocks: 6, granted: 7}
		r, ok := parseReport([]byte(formatReport(c, written, client)), time.Unix(100, 0))
		require.True(t, ok, "%q", client)
		assert.Equal(t, Report{Client: client, Holders: 3, Held: 4, Waiters: 2, Awaited: 5, Blocks: 6, Acquired: 7,
			Age: 10*time.Second - 5}, r)
	}
}

// A key under the reports' prefix that this package did not write is left
// out of Stats; Stats still succeeds.
func TestStats_LeavesOutAReportThatDoesNotParse(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	ctx := testCtx(t, 20*time.Second)
	cli := newClient(t, ep)
	s := newSem(t, cli, name, WithCapacity(1))
	_, err := cli.Put(ctx, s.rprefix+"garbage", "not a report")
	require.NoError(t, err)
	_, err = cli.Put(ctx, s.rprefix+"0000000000000001", formatReport(callers{holders: 1, held: 1}, time.Now(), "written by hand"))
	require.NoError(t, err)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Len(t, st.Reports, 1)
	assert.Equal(t, "written by hand", st.Reports[0].Client)
	assert.Zero(t, st.Reports[0].Lease, "the key has no lease")
	assert.Empty(t, st.Holders, "a report is no holder")
}

// After its lease is lost (its report went with it), a handle reports again
// on its new lease.
func TestReports_ANewLeaseGetsAReport(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	ctx := testCtx(t, 30*time.Second)
	cli := newClient(t, ep)
	a := newSem(t, newClient(t, ep), name, WithCapacity(2), WithBlocks(1), WithClientName("a"),
		WithTTL(2*time.Second), WithSafetyMargin(500*time.Millisecond))
	u, err := a.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(u)
	var old Report
	waitFor(t, "a reports", func() bool {
		var ok bool
		old, ok = reportOf(t, a, "a")
		return ok
	})
	_, err = cli.Revoke(ctx, clientv3.LeaseID(old.Lease))
	require.NoError(t, err)
	<-u.Lost()

	u, err = a.Acquire(ctx, 1)
	require.NoError(t, err, "a takes a block on a new lease")
	log.add(u)
	waitFor(t, "a reports on its new lease", func() bool {
		r, ok := reportOf(t, a, "a")
		return ok && r.Lease != old.Lease && r.Holders == 1
	})
	require.NoError(t, u.Release(ctx))
}

// FuzzParseReport checks that any value parses without panicking, that a
// report parsed has no negative count, and that what formatReport writes
// reads back whatever the label holds.
func FuzzParseReport(f *testing.F) {
	f.Add([]byte("3 4 2 5 6 7 90000000005 worker-1"), "worker-1", int64(3))
	f.Add([]byte("garbage"), "<i>\n\"x\" ", int64(0))
	f.Add([]byte("-1 2 3 4 5 6 7 x"), "", int64(1<<62))
	f.Fuzz(func(t *testing.T, v []byte, client string, n int64) {
		if r, ok := parseReport(v, time.Unix(100, 0)); ok {
			require.True(t, r.Holders >= 0 && r.Held >= 0 && r.Waiters >= 0 && r.Awaited >= 0 && r.Blocks >= 0, "%+v", r)
		}
		n = max(n, 0)
		c := callers{holders: int(n % 1000), held: n, waiters: 1, awaited: n, blocks: n, granted: uint64(n)}
		r, ok := parseReport([]byte(formatReport(c, time.Unix(90, 0), client)), time.Unix(100, 0))
		require.True(t, ok)
		assert.Equal(t, Report{Client: client, Holders: int(n % 1000), Held: n, Waiters: 1, Awaited: n, Blocks: n,
			Acquired: uint64(n), Age: 10 * time.Second}, r)
	})
}

// Callers waiting for a handle's first block are reported: they are what an
// operator looks for when a process is stuck.
func TestReports_CallersWaitingForAFirstBlockAreReported(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	log := &grantLog{}
	checkHistoryAtEnd(t, ep, name, log)
	ctx := testCtx(t, 20*time.Second)
	plain := newSem(t, newClient(t, ep), name, WithCapacity(1), WithClientName("plain"))
	c := newSem(t, newClient(t, ep), name, WithBlocks(1), WithClientName("c"))
	up, err := plain.Acquire(ctx, 1)
	require.NoError(t, err)
	log.add(up)
	waiting := startWaiting(ctx, c, 1)
	waitFor(t, "c reports its caller waiting with no block", func() bool {
		r, ok := reportOf(t, plain, "c")
		return ok && r.Waiters == 1 && r.Awaited == 1 && r.Blocks == 0 && r.Holders == 0
	})
	require.NoError(t, up.Release(ctx))
	u := <-waiting
	require.NotNil(t, u)
	log.add(u)
	require.NoError(t, u.Release(ctx))
}
