package grpcsem_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

// clientLimit returns the dial options of both client interceptors on l.
func clientLimit(l grpcsem.Limiter, opts ...grpcsem.Option) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(grpcsem.UnaryClientInterceptor(l, opts...)),
		grpc.WithChainStreamInterceptor(grpcsem.StreamClientInterceptor(l, opts...)),
	}
}

// TestClient_BoundsOutboundCallsInFlight sends a burst of unary calls and
// streams through a client limited to 3 units (streams weigh 2) and checks on
// the server that never more than that is in flight, and that every call gets
// through.
func TestClient_BoundsOutboundCallsInFlight(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			const capacity = 3
			var inFlight, peak atomic.Int64
			enter := func(n int64) {
				now := inFlight.Add(n)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
			}
			svc := &service{
				unary: func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
					enter(1)
					defer inFlight.Add(-1)
					return in, nil
				},
				stream: func(stream grpc.ServerStream) error {
					enter(2)
					defer inFlight.Add(-2)
					return echoStream(stream)
				},
			}
			sem := semaphore.New(capacity)
			lim := grpcsem.Semaphore(sem, func(_ context.Context, c grpcsem.Call) int64 {
				if c.Stream {
					return 2
				}
				return 1
			})
			cc := serve(t, tr, svc, nil, clientLimit(lim)...)
			errs := make(chan error, 60)
			for i := range 60 {
				go func() {
					if i%3 != 0 {
						_, err := echo.Call(t.Context(), cc, "x")
						errs <- err
						return
					}
					s, err := echo.Open(t.Context(), cc)
					if err == nil {
						err = s.SendMsg(&echo.Message{Text: "x"})
					}
					if err == nil {
						err = s.CloseSend()
					}
					for err == nil {
						err = s.RecvMsg(new(echo.Message))
					}
					if err == io.EOF {
						err = nil
					}
					errs <- err
				}()
			}
			for range 60 {
				require.NoError(t, <-errs)
			}
			assert.LessOrEqual(t, peak.Load(), int64(capacity), "units in flight on the server")
			assert.Equal(t, sem.Capacity(), sem.Available())
		})
	}
}

// TestClientStream_HoldsItsUnitsUntilGRPCFinishesIt ends a client stream on
// each path and checks that its units are held while it is open and back after.
func TestClientStream_HoldsItsUnitsUntilGRPCFinishesIt(t *testing.T) {
	paths := map[string]func(t *testing.T, cancel context.CancelFunc, s grpc.ClientStream, cc *grpc.ClientConn){
		"read to its end": func(t *testing.T, _ context.CancelFunc, s grpc.ClientStream, _ *grpc.ClientConn) {
			require.NoError(t, s.CloseSend())
			assert.ErrorIs(t, s.RecvMsg(new(echo.Message)), io.EOF)
		},
		"context cancelled": func(_ *testing.T, cancel context.CancelFunc, _ grpc.ClientStream, _ *grpc.ClientConn) { cancel() },
		"connection closed": func(_ *testing.T, _ context.CancelFunc, _ grpc.ClientStream, cc *grpc.ClientConn) { cc.Close() },
		"server error": func(t *testing.T, _ context.CancelFunc, s grpc.ClientStream, _ *grpc.ClientConn) {
			require.NoError(t, s.SendMsg(&echo.Message{Text: "fail"}))
			assert.Equal(t, codes.Aborted, status.Code(s.RecvMsg(new(echo.Message))))
		},
	}
	for _, tr := range transports {
		for name, end := range paths {
			t.Run(tr+"/"+name, func(t *testing.T) {
				svc := &service{stream: func(stream grpc.ServerStream) error {
					for {
						m := new(echo.Message)
						if err := stream.RecvMsg(m); err != nil {
							return nil
						}
						if m.Text == "fail" {
							return status.Error(codes.Aborted, "asked to fail")
						}
						if err := stream.SendMsg(m); err != nil {
							return err
						}
					}
				}}
				sem := semaphore.New(2)
				cc := serve(t, tr, svc, nil, clientLimit(grpcsem.Semaphore(sem, nil))...)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				s, err := echo.Open(ctx, cc)
				require.NoError(t, err)
				require.NoError(t, s.SendMsg(&echo.Message{Text: "ping"}))
				require.NoError(t, s.RecvMsg(new(echo.Message)))
				assert.Equal(t, int64(1), sem.Available(), "an open stream holds its unit")
				end(t, cancel, s, cc)
				require.Eventually(t, func() bool { return sem.Available() == sem.Capacity() }, 5*time.Second, time.Millisecond)
			})
		}
	}
}

func TestClient_RefusalKeepsTheLimitersError(t *testing.T) {
	sem := semaphore.New(1, semaphore.WithMaxWaiters(0), semaphore.WithName("backend"))
	sem.Consume(1)
	svc := &service{}
	cc := serve(t, "bufconn", svc, nil, clientLimit(grpcsem.Semaphore(sem, nil))...)
	_, err := echo.Call(t.Context(), cc, "x")
	st := status.Convert(err)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	assert.Contains(t, st.Message(), `"backend"`, "a client's refusal names its semaphore")
	_, err = echo.Open(t.Context(), cc)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Zero(t, sem.Stats().AcquiredImmediately, "nothing was admitted")
}

func TestClient_WaitsWithTheCallsContext(t *testing.T) {
	sem := semaphore.New(1)
	sem.Consume(1)
	cc := serve(t, "bufconn", &service{}, nil, clientLimit(grpcsem.Semaphore(sem, nil), grpcsem.WithTimeout(time.Hour))...)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := echo.Call(ctx, cc, "x")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
	ctx, cancel = context.WithCancel(t.Context())
	go func() {
		assert.Eventually(t, func() bool { return sem.Waiters() == 1 }, 5*time.Second, time.Millisecond)
		cancel()
	}()
	_, err = echo.Open(ctx, cc)
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	assert.Zero(t, sem.Waiters())
}

func TestPerTarget_GivesEachTargetItsOwnLimiter(t *testing.T) {
	made := map[string]*semaphore.Semaphore{}
	lim := grpcsem.PerTarget(func(target string) grpcsem.Limiter {
		s := semaphore.New(1)
		made[target] = s // under PerTarget's lock
		return grpcsem.Semaphore(s, nil)
	})
	a1 := serve(t, "bufconn", &service{}, nil, clientLimit(lim)...)
	b := serve(t, "tcp", &service{}, nil, clientLimit(lim)...)
	g := newGate()
	hold := &service{unary: func(ctx context.Context, in *echo.Message) (*echo.Message, error) { return in, g.wait(ctx) }}
	a2 := serve(t, "bufconn", hold, nil, clientLimit(lim)...) // the same target as a1
	done := make(chan error, 1)
	go func() {
		_, err := echo.Call(context.Background(), a2, "hold")
		done <- err
	}()
	<-g.running
	_, err := echo.Call(t.Context(), b, "x")
	require.NoError(t, err, "another target has its own limit")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err = echo.Call(ctx, a1, "x")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "the same target shares its limit: %v", err)
	close(g.release)
	require.NoError(t, <-done)
	assert.Len(t, made, 2)
	for target, s := range made {
		assert.Equal(t, s.Capacity(), s.Available(), target)
	}
}

// A later interceptor that fails the stream without calling the streamer never
// reaches gRPC's OnFinish: the interceptor gives the units back itself.
func TestClientStream_AnOpenThatFailsGivesTheUnitsBack(t *testing.T) {
	sem := semaphore.New(2)
	open := grpcsem.StreamClientInterceptor(grpcsem.Semaphore(sem, nil))
	refused := status.Error(codes.PermissionDenied, "refused by a later interceptor")
	failing := func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
		return nil, refused
	}
	for i := range 3 { // more than the capacity
		cs, err := open(t.Context(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, nil, "/echo.Echo/Stream", failing)
		assert.Nil(t, cs)
		require.ErrorIs(t, err, refused)
		require.Equal(t, sem.Capacity(), sem.Available(), "open %d: the units are back", i)
	}
}
