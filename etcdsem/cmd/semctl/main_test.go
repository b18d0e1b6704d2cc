package main

import (
	"context"
	"net"
	"net/url"
	"strings"
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
	assert.Contains(t, semctl("resize", "jobs", "1"), "capacity set to 1")
	out = semctl("status", "jobs")
	assert.Contains(t, out, "capacity 1, 2 units held", "shrinking never revokes holders")
	assert.Contains(t, out, "holders exceed the capacity")
	assert.Contains(t, semctl("break", "jobs", "maintenance"), "broken: maintenance")
	assert.Contains(t, semctl("status", "jobs"), "BROKEN: maintenance")
	assert.Contains(t, semctl("repair", "jobs"), "repaired")
	assert.NotContains(t, semctl("status", "jobs"), "BROKEN")

	done := make(chan string)
	go func() { done <- semctl("-for", "5s", "watch", "jobs") }()
	// Release once the watch has started: its handle's lease-less read shows
	// up as a linearizable read on the server, so poll for the holder instead.
	require.NoError(t, u.Release(ctx))
	out = <-done
	assert.Contains(t, out, "watching jobs")
	if !strings.Contains(out, "released 2 units of worker-1") {
		// The release happened before the watch's first read.
		assert.Contains(t, out, "0 held")
	}
	rep, err := etcdsem.Audit(ctx, cli, "jobs")
	require.NoError(t, err)
	assert.Empty(t, rep.Violations, "the history keeps capacity and FIFO at every revision")
	assert.Equal(t, 1, rep.Grants)
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
