package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairsem/semaphore/etcdsem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

func TestSemctl_FailsWithoutEndpoints(t *testing.T) {
	err := run(context.Background(), &strings.Builder{}, []string{"status", "x"})
	assert.ErrorContains(t, err, "-endpoints is required")
}

func TestSemctl_StatusResizeBreakRepairWatch(t *testing.T) {
	ep := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()
	s, err := etcdsem.New(ctx, cli, "jobs", etcdsem.WithCapacity(2), etcdsem.WithClientName("worker-1"))
	require.NoError(t, err)
	defer s.Close()
	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)

	semctl := func(args ...string) string {
		var out strings.Builder
		require.NoError(t, run(ctx, &out, append([]string{"-endpoints", ep}, args...)))
		return out.String()
	}
	out := semctl("status", "jobs")
	assert.Contains(t, out, "capacity 2, 2 units held by 1 holders, 0 waiters")
	assert.Contains(t, out, "worker-1")
	assert.Regexp(t, `1 handles .*\n.*\nhandle +[0-9a-f]+ +1 +2 +0 +0 +no report: plain mode, or none written yet +"worker-1"\n`, out, "one line per handle")
	assert.Contains(t, semctl("resize", "jobs", "1"), "capacity set to 1")
	out = semctl("status", "jobs")
	assert.Contains(t, out, "capacity 1, 2 units held", "shrinking never revokes holders")
	assert.Contains(t, out, "holders exceed the capacity")
	assert.Contains(t, semctl("break", "jobs", "maintenance"), `broken: "maintenance"`)
	assert.Contains(t, semctl("status", "jobs"), `BROKEN: "maintenance"`)
	assert.Contains(t, semctl("repair", "jobs"), "repaired")
	assert.NotContains(t, semctl("status", "jobs"), "BROKEN")

	// The watch prints its first view before it watches from the revision
	// after it, so a release after that line is always reported as one.
	var wout syncBuilder
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	done := make(chan error, 1)
	go func() { done <- run(wctx, &wout, []string{"-endpoints", ep, "-for", "30s", "watch", "jobs"}) }()
	require.Eventually(t, func() bool { return strings.Contains(wout.String(), `watching "jobs"`) }, 30*time.Second, 10*time.Millisecond)
	assert.Contains(t, wout.String(), "2 held", "the first view shows the holder")
	require.NoError(t, u.Release(ctx))
	require.Eventually(t, func() bool { return strings.Contains(wout.String(), `released 2 units of "worker-1"`) }, 30*time.Second, 10*time.Millisecond,
		"the watch reports the release")
	require.NoError(t, s.Break(ctx, errors.New("disk\nfull")))
	require.Eventually(t, func() bool { return strings.Contains(wout.String(), `broken: "disk\nfull"`) }, 30*time.Second, 10*time.Millisecond,
		"the watch reports a break, its reason on the line")
	require.NoError(t, s.Repair(ctx))
	require.Eventually(t, func() bool { return strings.Contains(wout.String(), "repaired\n") }, 30*time.Second, 10*time.Millisecond,
		"the watch reports the repair")
	wcancel()
	require.NoError(t, <-done, "an interrupted watch ends without error")
	assert.Contains(t, semctl("drain", "jobs"), "drained")
	rep, err := etcdsem.Audit(ctx, cli, "jobs")
	require.NoError(t, err)
	assert.Empty(t, rep.Violations, "the history keeps capacity and FIFO at every revision")
	assert.Equal(t, 1, rep.Grants)
}

// A block-mode handle's blocks are its keys, and its callers are in its
// report: status shows both, one line per handle (process), whatever the
// handle's label holds.
func TestSemctl_StatusShowsEachProcesssBlocksAndCallers(t *testing.T) {
	ep := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	newSem := func(opts ...etcdsem.Option) *etcdsem.Semaphore {
		// A client of its own: a process of its own.
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
		require.NoError(t, err)
		t.Cleanup(func() { cli.Close() })
		s, err := etcdsem.New(ctx, cli, "jobs", opts...)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	hostile := strings.Repeat("<b>\n\"x\" ", 625) // 5,000 bytes of markup, newlines and quotes
	a := newSem(etcdsem.WithCapacity(6), etcdsem.WithBlocks(3), etcdsem.WithClientName("blocks-a"))
	b := newSem(etcdsem.WithBlocks(1), etcdsem.WithClientName("blocks-b"))
	c := newSem(etcdsem.WithBlocks(1), etcdsem.WithClientName(hostile))
	plain := newSem(etcdsem.WithClientName("plain-p"))
	var us []*etcdsem.Units
	for _, s := range []*etcdsem.Semaphore{a, a, a, b, c, plain} {
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		us = append(us, u)
	}
	waiting := make(chan *etcdsem.Units, 1)
	go func() {
		// Every unit is held, none free in a block to go back: it waits.
		u, _ := a.Acquire(ctx, 1)
		waiting <- u
	}()

	status := func() string {
		var out strings.Builder
		require.NoError(t, run(ctx, &out, []string{"-endpoints", ep, "status", "jobs"}))
		return out.String()
	}
	lines := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^handle +[0-9a-f]+ +1 +3 +0 +0 +3 holding 3 units, 1 waiting for 1 units, blocks of 3 units, reported [^ ]+ ago +"blocks-a"$`),
		regexp.MustCompile(`(?m)^handle +[0-9a-f]+ +1 +1 +0 +0 +1 holding 1 units, 0 waiting for 0 units, blocks of 1 units, reported [^ ]+ ago +"blocks-b"$`),
		regexp.MustCompile(`(?m)^handle +[0-9a-f]+ +1 +1 +0 +0 +1 holding 1 units, 0 waiting for 0 units, blocks of 1 units, reported [^ ]+ ago +` +
			regexp.QuoteMeta(strconv.Quote(hostile)) + `$`),
		regexp.MustCompile(`(?m)^handle +[0-9a-f]+ +1 +1 +0 +0 +no report: plain mode, or none written yet +"plain-p"$`),
	}
	all := func(out string) bool {
		for _, l := range lines {
			if !l.MatchString(out) {
				return false
			}
		}
		return true
	}
	// Polled until the reports catch up, on this goroutine, so that the
	// last output read is the one a failure shows.
	out := status()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for deadline := time.Now().Add(15 * time.Second); !all(out); out = status() {
		require.True(t, time.Now().Before(deadline), "each process's line shows its blocks and callers, the label quoted:\n%.3000s", out)
		<-poll.C
	}
	handleLines := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "handle ") {
			handleLines++
		}
	}
	assert.Equal(t, 4, handleLines, "one line per process")
	assert.Contains(t, out, "4 handles (processes")

	for _, u := range us {
		require.NoError(t, u.Release(ctx))
	}
	u := <-waiting
	require.NotNil(t, u)
	require.NoError(t, u.Release(ctx))
}

// Names that end in "/", nest or hold any character are semaphores of their
// own, and semctl administers each alone.
func TestSemctl_AnyNonEmptyNameIsItsOwnSemaphore(t *testing.T) {
	ep := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	semctl := func(args ...string) string {
		var out, errOut strings.Builder
		require.Equal(t, 0, runMain(ctx, append([]string{"-endpoints", ep}, args...), &out, &errOut), errOut.String())
		return out.String()
	}
	names := []string{"x", "x/", "x/q", "x/q/y", "x%2Fq", "задачи"}
	for i, name := range names {
		assert.Contains(t, semctl("resize", name, strconv.Itoa(i+1)), "capacity set to "+strconv.Itoa(i+1))
	}
	assert.Contains(t, semctl("break", "x/q", "maintenance"), `broken: "maintenance"`)
	for i, name := range names {
		out := semctl("status", name)
		assert.Contains(t, out, fmt.Sprintf("%q: capacity %d, 0 units held by 0 holders, 0 waiters", name, i+1))
		if name == "x/q" {
			assert.Contains(t, out, `BROKEN: "maintenance"`)
		} else {
			assert.NotContains(t, out, "BROKEN", name)
		}
	}
}

func startEtcd(t *testing.T) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cu, pu := freeURL(t), freeURL(t)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready")
	}
	return cu.String()
}

func freeURL(t *testing.T) url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// syncBuilder is a strings.Builder safe for one writer and concurrent readers.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncBuilder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuilder) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
