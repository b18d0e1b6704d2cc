package etcdsem

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"go.uber.org/goleak"
	"go.uber.org/zap"
)

// etcdChildEnv makes the test binary run as an etcd server (see process_test.go).
const etcdChildEnv = "ETCDSEM_TEST_RUN_ETCD"

func TestMain(m *testing.M) {
	if os.Getenv(etcdChildEnv) == "1" {
		watchParent()
		etcdmain.Main(os.Args)
		os.Exit(0)
	}
	flag.Parse()
	if to := flag.Lookup("test.timeout").Value.(flag.Getter).Get().(time.Duration); to > 0 {
		// A test that never ends runs no cleanup: kill the processes the
		// tests started before the binary's timeout ends it.
		margin := min(to/10, 30*time.Second)
		time.AfterFunc(to-margin, func() {
			n := killChildren()
			fmt.Fprintf(os.Stderr, "etcdsem tests: %v of the %v timeout passed: killed %d child process groups\n", to-margin, to, n)
		})
	}
	code := m.Run()
	if sharedEtcd != nil {
		sharedEtcd.Close()
	}
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignores goroutines that etcd's client and server libraries start
// once per process and never stop.
var leakOptions = []goleak.Option{
	goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
	goleak.IgnoreAnyFunction("go.etcd.io/etcd/pkg/v3/logutil.(*MergeLogger).outputLoop"),
	goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*loggingT).flushDaemon"),
}

var (
	sharedOnce sync.Once
	sharedEtcd *embed.Etcd
	sharedErr  error
)

// freeURL returns http://127.0.0.1:port for a port free now.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return url.URL{Scheme: "http", Host: addr}
}

// startEmbedded starts a single-member etcd in this process with short
// election timing (so the shortest lease TTL is 1s) in dir, configured
// further by each of with.
func startEmbedded(t testing.TB, dir string, with ...func(*embed.Config)) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "m0"
	cfg.Dir = dir
	cu, pu := freeURL(t), freeURL(t)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs, cfg.ElectionMs = 50, 500
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	for _, f := range with {
		f(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after 30s")
	}
}

// sharedEndpoint returns the client URL of an embedded etcd shared by the
// package's tests (each test uses its own semaphore names).
func sharedEndpoint(t testing.TB) string {
	t.Helper()
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "etcdsem-test-")
		if err != nil {
			sharedErr = err
			return
		}
		sharedEtcd, sharedErr = startEmbedded(t, dir)
	})
	require.NoError(t, sharedErr)
	return sharedEtcd.Config().ListenClientUrls[0].String()
}

// newClient returns a client of endpoints, closed when the test ends.
func newClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli
}

// newSem returns a handle closed when the test ends (before its client).
func newSem(t testing.TB, cli *clientv3.Client, name string, opts ...Option) *Semaphore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New(ctx, cli, name, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// testName returns a semaphore name unique to the test and to this run of it
// (with -count, each run starts from a fresh history).
func testName(t testing.TB) string {
	t.Helper()
	if n, ok := testNames.Load(t); ok {
		return n.(string)
	}
	n := fmt.Sprintf("etcdsem-test/%s/%d", t.Name(), testRuns.Add(1))
	testNames.Store(t, n)
	return n
}

var (
	testRuns  atomic.Int64
	testNames sync.Map // testing.TB -> name
)

// testCtx returns a context bounding a test step.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// debugState describes a handle's mirror and requests, for failing tests. Its
// RPCs run outside the handle's lock.
func (s *Semaphore) debugState() string {
	l := s.sess.current()
	s.mu.Lock()
	out := fmt.Sprintf("handle %s: rev %d cap %d broken %v lease %p\n", s.clientTag, s.q.rev, s.q.capacity, s.q.broken, l)
	for _, k := range s.q.keys {
		out += fmt.Sprintf("  key %s rev %d n %d state %d grantRev %d\n", k.key, k.createRev, k.n, k.state, k.grantRev)
	}
	for _, r := range s.mine {
		out += fmt.Sprintf("  mine %s createRev %d n %d state %d\n", r.key, r.createRev, r.n, r.state)
	}
	s.mu.Unlock()
	if l != nil {
		l.mu.Lock()
		out += fmt.Sprintf("  lease %x deadline in %v cause %v\n", int64(l.id), time.Until(l.deadline), l.cause)
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		ttl, err := s.sess.cli.TimeToLive(ctx, l.id)
		cancel()
		if err == nil {
			out += fmt.Sprintf("  server TTL %d\n", ttl.TTL)
		} else {
			out += fmt.Sprintf("  server TTL err %v\n", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	resp, err := s.sess.cli.Get(ctx, s.qprefix, clientv3.WithPrefix())
	cancel()
	if err == nil {
		for _, kv := range resp.Kvs {
			out += fmt.Sprintf("  etcd %s rev %d lease %x\n", kv.Key, kv.CreateRevision, kv.Lease)
		}
	}
	return out
}

// req returns the request plain-mode units hold: their key.
func (u *Units) req() *request { return u.hold.(*request) }

// localWaiters returns the number of s's callers waiting for units of its
// blocks.
func localWaiters(s *Semaphore) int { return s.pool.ep.Load().local.Waiters() }
