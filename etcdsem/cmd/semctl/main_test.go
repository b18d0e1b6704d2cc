package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
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
	assert.Regexp(t, `1 handles .*\n.*\nhandle +worker-1 +[0-9a-f]+ +1 +2 +0 +0`, out, "one line per handle")
	assert.Contains(t, semctl("resize", "jobs", "1"), "capacity set to 1")
	out = semctl("status", "jobs")
	assert.Contains(t, out, "capacity 1, 2 units held", "shrinking never revokes holders")
	assert.Contains(t, out, "holders exceed the capacity")
	assert.Contains(t, semctl("break", "jobs", "maintenance"), "broken: maintenance")
	assert.Contains(t, semctl("status", "jobs"), "BROKEN: maintenance")
	assert.Contains(t, semctl("repair", "jobs"), "repaired")
	assert.NotContains(t, semctl("status", "jobs"), "BROKEN")

	// The watch prints its first view before it watches from the revision
	// after it, so a release after that line is always reported as one.
	var wout syncBuilder
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	done := make(chan error, 1)
	go func() { done <- run(wctx, &wout, []string{"-endpoints", ep, "-for", "30s", "watch", "jobs"}) }()
	require.Eventually(t, func() bool { return strings.Contains(wout.String(), "watching jobs") }, 30*time.Second, 10*time.Millisecond)
	assert.Contains(t, wout.String(), "2 held", "the first view shows the holder")
	require.NoError(t, u.Release(ctx))
	require.Eventually(t, func() bool { return strings.Contains(wout.String(), "released 2 units of worker-1") }, 30*time.Second, 10*time.Millisecond,
		"the watch reports the release")
	wcancel()
	require.NoError(t, <-done, "an interrupted watch ends without error")
	assert.Contains(t, semctl("drain", "jobs"), "drained")
	rep, err := etcdsem.Audit(ctx, cli, "jobs")
	require.NoError(t, err)
	assert.Empty(t, rep.Violations, "the history keeps capacity and FIFO at every revision")
	assert.Equal(t, 1, rep.Grants)
}

// A block-mode handle's blocks are its keys: status shows them per handle.
func TestSemctl_StatusShowsEachHandlesBlocks(t *testing.T) {
	ep := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()
	a, err := etcdsem.New(ctx, cli, "jobs", etcdsem.WithCapacity(8), etcdsem.WithBlocks(3), etcdsem.WithClientName("blocks-a"))
	require.NoError(t, err)
	defer a.Close()
	b, err := etcdsem.New(ctx, cli, "jobs", etcdsem.WithBlocks(2), etcdsem.WithClientName("blocks-b"))
	require.NoError(t, err)
	defer b.Close()
	var us []*etcdsem.Units
	for _, s := range []*etcdsem.Semaphore{a, a, b} {
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		us = append(us, u)
	}
	var out strings.Builder
	require.NoError(t, run(ctx, &out, []string{"-endpoints", ep, "status", "jobs"}))
	assert.Regexp(t, `handle +blocks-a +[0-9a-f]+ +1 +3 +0 +0`, out.String(), "a's callers share one block of 3")
	assert.Regexp(t, `handle +blocks-b +[0-9a-f]+ +1 +2 +0 +0`, out.String())
	for _, u := range us {
		require.NoError(t, u.Release(ctx))
	}
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
	assert.Contains(t, semctl("break", "x/q", "maintenance"), "broken: maintenance")
	for i, name := range names {
		out := semctl("status", name)
		assert.Contains(t, out, fmt.Sprintf("%s: capacity %d, 0 units held by 0 holders, 0 waiters", name, i+1))
		if name == "x/q" {
			assert.Contains(t, out, "BROKEN: maintenance")
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
