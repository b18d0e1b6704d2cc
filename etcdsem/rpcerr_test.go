package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/fulltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// countingClient returns a client of endpoint and the number of its unary
// RPCs in flight, so a test knows when a call is waiting on etcd.
func countingClient(t testing.TB, endpoint string) (*clientv3.Client, *atomic.Int64) {
	t.Helper()
	var inFlight atomic.Int64
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)},
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	return cli, &inFlight
}

// waitInFlight waits until n unary RPCs of the client are in flight.
func waitInFlight(t testing.TB, inFlight *atomic.Int64, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return inFlight.Load() == n }, 20*time.Second, 5*time.Millisecond, "waiting for %d RPCs in flight", n)
}

// An acquire whose transaction etcd refuses ends with etcd's error instead of
// retrying until its context ends. Here the request is too large by the client
// label it carries: above etcd's limit of 1.5 MiB, below gRPC's of 2 MiB.
func TestAcquire_RequestEtcdRefusesEndsTheCall(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	s := newSem(t, cli, testName(t), WithCapacity(1), WithClientName(strings.Repeat("c", 1700<<10)))
	ctx := testCtx(t, 20*time.Second)
	_, err := s.Acquire(ctx, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, rpctypes.ErrRequestTooLarge)
	assert.NotErrorIs(t, err, semaphore.ErrTimedOut, "ended by etcd's refusal, not by the context")
	assert.NoError(t, ctx.Err())
	assert.Contains(t, err.Error(), ": acquire 1 unit: refused for good: etcdserver: request is too large")
	_, ok := semaphore.OutcomeOf(err)
	assert.False(t, ok, "etcd's refusal is no outcome of the semaphore")
	assert.True(t, noQueueKeys(t, cli, s.Name()), "nothing was written")
}

// An acquire etcd refuses ends with etcd's refusal even when every reply
// takes longer than one attempt (a slow link, a busy server): each attempt
// the reply outlasts is followed by one twice as long, up to the lease TTL,
// rather than by the same one again until the caller's context ends.
func TestAcquire_RefusalSlowerThanAnAttemptStillEndsTheCall(t *testing.T) {
	fulltest.Fault(t)
	// A server of its own that refuses requests above 16 KiB, so that the
	// refused request is small: a large one would fill the slow link.
	e, err := startEmbedded(t, t.TempDir(), func(cfg *embed.Config) { cfg.MaxRequestBytes = 16 << 10 })
	require.NoError(t, err)
	t.Cleanup(e.Close)
	px := newProxy(t, e.Config().ListenClientUrls[0].String())
	cli := newClient(t, px.endpoint())
	// One attempt is a third of the TTL, 2s; each reply takes 2.5s, which the
	// lease's renewals keep up with (see TestLease_ASlowLinkKeepsTheLeaseFromItsGrant).
	s := newSem(t, cli, testName(t), WithCapacity(1), WithTTL(6*time.Second), WithSafetyMargin(200*time.Millisecond),
		WithClientName(strings.Repeat("c", 20<<10)))
	t.Cleanup(func() { px.delay(0) }) // before s's Close
	px.delay(2500 * time.Millisecond)
	ctx := testCtx(t, 30*time.Second)
	start := time.Now()
	_, err = s.Acquire(ctx, 1)
	require.Error(t, err)
	assert.ErrorIs(t, err, rpctypes.ErrRequestTooLarge, "ended by etcd's refusal")
	assert.NoError(t, ctx.Err(), "not by the context")
	t.Logf("refused after %v", time.Since(start).Round(time.Millisecond))
}

// Close ends every call of the handle that waits on etcd, with ErrClosed,
// however long the call's own context would let it wait.
func TestClose_EndsEveryCallInFlight(t *testing.T) {
	ep := sharedEndpoint(t)
	px := newProxy(t, ep)
	cli, inFlight := countingClient(t, px.endpoint())
	s, err := New(testCtx(t, 10*time.Second), cli, testName(t), WithCapacity(1), WithTTL(2*time.Second))
	require.NoError(t, err)
	ctx := testCtx(t, time.Minute)
	warmUp(t, ctx, s, &grantLog{}) // the lease exists: Acquire goes straight to its transaction

	calls := map[string]func() error{
		"Acquire":    func() error { _, err := s.Acquire(ctx, 1); return err },
		"TryAcquire": func() error { _, _, err := s.TryAcquire(ctx, 1); return err },
		"Stats":      func() error { _, err := s.Stats(ctx); return err },
		"Drain":      func() error { return s.Drain(ctx) },
		"Resize":     func() error { return s.Resize(ctx, 2) },
		"Break":      func() error { return s.Break(ctx, errors.New("x")) },
		"Repair":     func() error { return s.Repair(ctx) },
	}
	closeEndsCalls(t, s, px, calls, func() bool { return inFlight.Load() >= int64(len(calls)) })
}

// closeEndsCalls starts calls on s with px holding every byte to and from
// etcd, waits until waiting says they wait, closes s, and checks that every
// call ends with ErrClosed, not the context's error, and that Close returns,
// each within 10s.
func closeEndsCalls(t *testing.T, s *Semaphore, px *proxy, calls map[string]func() error, waiting func() bool) {
	t.Helper()
	px.hold(true, true)
	defer px.release()
	errs := make(map[string]chan error, len(calls))
	for op, call := range calls {
		ch := make(chan error, 1)
		errs[op] = ch
		go func() { ch <- call() }()
	}
	waitFor(t, "the calls wait on etcd", waiting)
	closing := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	var stuck []chan error
	for op, ch := range errs {
		select {
		case err := <-ch:
			assert.ErrorIs(t, err, ErrClosed, op)
			assert.NotErrorIs(t, err, context.Canceled, op)
		case <-time.After(10 * time.Second):
			t.Errorf("%s still waits on etcd 10s after Close", op)
			stuck = append(stuck, ch)
		}
	}
	t.Logf("every call ended %v after Close was called", time.Since(closing).Round(time.Millisecond))
	select {
	case <-closed: // its revocation could not reach etcd: the lease expires
		t.Logf("Close returned after %v (TTL 2s)", time.Since(closing).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Error("Close still waits 10s later, past its bound of the lease TTL (2s)")
		stuck = append(stuck, closed)
	}
	px.release()
	for _, ch := range stuck {
		<-ch
	}
}

// Each error etcd's client returns is classified once: retried, refused for
// good, or the lease gone. The values are etcd's own and gRPC's, as the client
// returns them, and wrapped.
func TestClassify_EtcdErrors(t *testing.T) {
	cases := []struct {
		err  error
		want rpcFailure
	}{
		{rpctypes.ErrLeaseNotFound, rpcLeaseGone},
		{rpctypes.ErrGRPCLeaseNotFound, rpcLeaseGone},
		{fmt.Errorf("txn: %w", rpctypes.ErrLeaseNotFound), rpcLeaseGone},

		{rpctypes.ErrRequestTooLarge, rpcRefused},
		{rpctypes.ErrGRPCRequestTooLarge, rpcRefused},
		{fmt.Errorf("txn: %w", rpctypes.ErrRequestTooLarge), rpcRefused},
		{rpctypes.ErrNoSpace, rpcRefused},
		{rpctypes.ErrPermissionDenied, rpcRefused},
		{rpctypes.ErrInvalidAuthToken, rpcRefused},
		{rpctypes.ErrAuthNotEnabled, rpcRefused},
		{rpctypes.ErrTooManyOps, rpcRefused},
		{rpctypes.ErrDuplicateKey, rpcRefused},
		{rpctypes.ErrEmptyKey, rpcRefused},
		{rpctypes.ErrLeaseTTLTooLarge, rpcRefused},
		{rpctypes.ErrNotCapable, rpcRefused},
		{rpctypes.ErrCorrupt, rpcRefused},
		{status.Error(codes.ResourceExhausted, "grpc: trying to send message larger than max (2200000 vs. 2097152)"), rpcRefused},
		{status.Error(codes.Canceled, "grpc: the client connection is closing"), rpcRefused},
		{status.Error(codes.Unimplemented, "unknown method"), rpcRefused},

		{rpctypes.ErrTooManyRequests, rpcUnknown},
		{rpctypes.ErrNotLeader, rpcUnknown},
		{rpctypes.ErrNoLeader, rpcUnknown},
		{rpctypes.ErrLeaderChanged, rpcUnknown},
		{rpctypes.ErrStopped, rpcUnknown},
		{rpctypes.ErrTimeout, rpcUnknown},
		{rpctypes.ErrTimeoutDueToLeaderFail, rpcUnknown},
		{rpctypes.ErrTimeoutDueToConnectionLost, rpcUnknown},
		{rpctypes.ErrTimeoutWaitAppliedIndex, rpcUnknown},
		{rpctypes.ErrUnhealthy, rpcUnknown},
		{rpctypes.ErrGRPCNoLeader, rpcUnknown},
		{status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused\""), rpcUnknown},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), rpcUnknown},
		{status.Error(codes.Internal, "stream terminated by RST_STREAM with error code: INTERNAL_ERROR"), rpcUnknown},
		{context.DeadlineExceeded, rpcUnknown},
		{context.Canceled, rpcUnknown},
		{errors.New("io: read/write on closed pipe"), rpcUnknown},
	}
	names := map[rpcFailure]string{rpcUnknown: "unknown", rpcRefused: "refused", rpcLeaseGone: "lease gone"}
	for _, c := range cases {
		assert.Equal(t, names[c.want], names[classify(c.err)], "%v", c.err)
	}
}
