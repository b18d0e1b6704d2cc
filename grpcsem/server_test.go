package grpcsem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

// holdOne starts a unary call that holds its units until g.release closes, and
// waits until its handler runs.
func holdOne(t *testing.T, cc *grpc.ClientConn, g *gate) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := echo.Call(context.Background(), cc, "hold")
		done <- err
	}()
	<-g.running
	return done
}

func TestUnaryServer_HandlerRunsHoldingItsUnits(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			sem := semaphore.New(5)
			held := make(chan int64, 1)
			svc := &service{unary: func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
				held <- grpcsem.UnitsFrom(ctx).Count()
				assert.Equal(t, int64(2), sem.Available(), "units taken while the handler runs")
				return in, nil
			}}
			w := grpcsem.MethodWeights(map[string]int64{echo.UnaryName: 3}, 1)
			cc := serve(t, tr, svc, serverLimit(grpcsem.Semaphore(sem, w)))
			out, err := echo.Call(t.Context(), cc, "hi")
			require.NoError(t, err)
			assert.Equal(t, "hi", out)
			assert.Equal(t, int64(3), <-held)
			assert.Equal(t, sem.Capacity(), sem.Available(), "units back once the call returned")
		})
	}
}

func TestUnaryServer_WaitsInFIFOOrderUntilUnitsFree(t *testing.T) {
	sem := semaphore.New(1)
	g := newGate()
	ran := make(chan string, 3) // capacity 1: handlers run one at a time, in grant order
	svc := &service{unary: func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
		if in.Text == "hold" {
			return in, g.wait(ctx)
		}
		ran <- in.Text
		return in, nil
	}}
	cc := serve(t, "bufconn", svc, serverLimit(grpcsem.Semaphore(sem, nil)))
	holder := holdOne(t, cc, g)
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := echo.Call(context.Background(), cc, strconv.Itoa(i))
			errs <- err
		}()
		require.Eventually(t, func() bool { return sem.Waiters() == i+1 }, 5*time.Second, time.Millisecond)
	}
	close(g.release)
	require.NoError(t, <-holder)
	for i := range 3 {
		require.NoError(t, <-errs)
		assert.Equal(t, strconv.Itoa(i), <-ran, "granted in arrival order")
	}
	assert.Equal(t, sem.Capacity(), sem.Available())
}

// TestServer_RefusalsFollowTheTable checks, over both transports and both
// kinds of call, the status and the pushback trailer a grpc-go client sees for
// each way admission fails at once.
func TestServer_RefusalsFollowTheTable(t *testing.T) {
	type refusal struct {
		code     codes.Code
		pushback string // "jitter": within 0.8..1.2 of 100ms
	}
	cases := []struct {
		name string
		opts []grpcsem.Option
		// setup makes the limiter refuse a call of weight 2; it may hold a call
		// through holdOne with the gate.
		setup func(t *testing.T, sem *semaphore.Semaphore)
		want  refusal
	}{
		{"queue full", nil, func(t *testing.T, sem *semaphore.Semaphore) { sem.Consume(2) },
			refusal{codes.ResourceExhausted, "jitter"}},
		{"queue full, Unavailable", []grpcsem.Option{grpcsem.WithOverloadCode(codes.Unavailable)},
			func(t *testing.T, sem *semaphore.Semaphore) { sem.Consume(2) },
			refusal{codes.Unavailable, "jitter"}},
		{"queue full, no pushback", []grpcsem.Option{grpcsem.WithPushback(0)},
			func(t *testing.T, sem *semaphore.Semaphore) { sem.Consume(2) },
			refusal{codes.ResourceExhausted, ""}},
		{"broken", nil, func(t *testing.T, sem *semaphore.Semaphore) { sem.Break(errors.New("shutting down")) },
			refusal{codes.ResourceExhausted, ""}},
		{"too large", nil, func(t *testing.T, sem *semaphore.Semaphore) { sem.Resize(1) },
			refusal{codes.ResourceExhausted, "-1"}},
	}
	for _, tr := range transports {
		for _, tc := range cases {
			for _, kind := range []string{"unary", "stream"} {
				t.Run(fmt.Sprintf("%s/%s/%s", tr, tc.name, kind), func(t *testing.T) {
					// No waiting allowed: a call that does not fit is refused.
					sem := semaphore.New(2, semaphore.WithMaxWaiters(0), semaphore.WithName("secret-name"))
					lim := grpcsem.Semaphore(sem, func(context.Context, grpcsem.Call) int64 { return 2 })
					cc := serve(t, tr, &service{}, serverLimit(lim, tc.opts...))
					tc.setup(t, sem)
					var trailer metadata.MD
					var err error
					if kind == "unary" {
						_, err = echo.Call(t.Context(), cc, "x", grpc.Trailer(&trailer))
					} else {
						var s grpc.ClientStream
						s, err = echo.Open(t.Context(), cc)
						require.NoError(t, err)
						err = s.RecvMsg(new(echo.Message))
						trailer = s.Trailer()
					}
					st := status.Convert(err)
					assert.Equal(t, tc.want.code, st.Code(), "%v", err)
					assert.NotContains(t, st.Message(), "secret-name", "the semaphore's name stays on the server")
					got := trailer.Get(grpcsem.PushbackKey)
					switch tc.want.pushback {
					case "":
						assert.Empty(t, got)
					case "jitter":
						require.Len(t, got, 1)
						ms, err := strconv.Atoi(got[0])
						require.NoError(t, err)
						assert.True(t, ms >= 80 && ms < 120, "pushback %dms", ms)
					default:
						assert.Equal(t, []string{tc.want.pushback}, got)
					}
				})
			}
		}
	}
}

func TestServer_WaitTimeoutIsOverloadWithPushback(t *testing.T) {
	sem := semaphore.New(1)
	sem.Consume(1)
	cc := serve(t, "bufconn", &service{}, serverLimit(grpcsem.Semaphore(sem, nil), grpcsem.WithTimeout(20*time.Millisecond)))
	var trailer metadata.MD
	_, err := echo.Call(t.Context(), cc, "x", grpc.Trailer(&trailer))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Len(t, trailer.Get(grpcsem.PushbackKey), 1)
	assert.Equal(t, uint64(1), sem.Stats().TimedOut, "the semaphore counts the wait as timed out")
	assert.Zero(t, sem.Waiters())
}

func TestServer_CallDeadlineEndsTheWait(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			sem := semaphore.New(1)
			sem.Consume(1)
			cc := serve(t, tr, &service{}, serverLimit(grpcsem.Semaphore(sem, nil)))
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			_, err := echo.Call(ctx, cc, "x")
			assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
			require.Eventually(t, func() bool { return sem.Waiters() == 0 }, 5*time.Second, time.Millisecond,
				"the server's wait ends with the call's deadline")
		})
	}
}

func TestServer_CancelledClientsLeaveTheQueue(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			sem := semaphore.New(2, semaphore.WithMaxWaiters(4))
			cc := serve(t, tr, &service{}, serverLimit(grpcsem.Semaphore(sem, nil)))
			sem.Consume(2)
			ctx, cancel := context.WithCancel(t.Context())
			errs := make(chan error, 4)
			for i := range 4 {
				go func() {
					if i%2 == 0 {
						_, err := echo.Call(ctx, cc, "x")
						errs <- err
						return
					}
					s, err := echo.Open(ctx, cc)
					if err == nil {
						err = s.RecvMsg(new(echo.Message))
					}
					errs <- err
				}()
			}
			require.Eventually(t, func() bool { return sem.Waiters() == 4 }, 5*time.Second, time.Millisecond)
			cancel()
			for range 4 {
				assert.Equal(t, codes.Canceled, status.Code(<-errs))
			}
			require.Eventually(t, func() bool { return sem.Waiters() == 0 }, 5*time.Second, time.Millisecond)
			sem.Release(2)
			_, err := echo.Call(t.Context(), cc, "after")
			require.NoError(t, err, "the queue is free again")
			assert.Equal(t, sem.Capacity(), sem.Available())
		})
	}
}

// recovery turns a handler's panic into codes.Internal, as a recovery
// interceptor chained before grpcsem's does.
func recovery() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = status.Errorf(codes.Internal, "panic: %v", r)
				}
			}()
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = status.Errorf(codes.Internal, "panic: %v", r)
				}
			}()
			return h(srv, ss)
		}),
	}
}

// TestStreamServer_HoldsItsUnitsUntilItEnds opens a stream, checks that it
// holds its units while it is open (after a message each way), ends it on
// each exit path, and checks that the units are back and the status is the
// path's.
func TestStreamServer_HoldsItsUnitsUntilItEnds(t *testing.T) {
	paths := []struct {
		name string
		code codes.Code
		// end makes the stream end, from the client or through the handler.
		end func(cancel context.CancelFunc, s grpc.ClientStream, quit chan<- string)
	}{
		{"normal end", codes.OK, func(_ context.CancelFunc, s grpc.ClientStream, _ chan<- string) { _ = s.CloseSend() }},
		{"handler error", codes.FailedPrecondition, func(_ context.CancelFunc, _ grpc.ClientStream, quit chan<- string) { quit <- "error" }},
		{"client cancel", codes.Canceled, func(cancel context.CancelFunc, _ grpc.ClientStream, _ chan<- string) { cancel() }},
		{"handler panic", codes.Internal, func(_ context.CancelFunc, _ grpc.ClientStream, quit chan<- string) { quit <- "panic" }},
	}
	for _, tr := range transports {
		for _, p := range paths {
			t.Run(tr+"/"+p.name, func(t *testing.T) {
				sem := semaphore.New(3)
				quit := make(chan string, 1)
				handlerDone := make(chan struct{}, 1)
				svc := &service{stream: func(stream grpc.ServerStream) error {
					defer func() { handlerDone <- struct{}{} }()
					if grpcsem.UnitsFrom(stream.Context()).Count() != 2 {
						return status.Error(codes.Internal, "units not in the stream's context")
					}
					msgs := make(chan error, 1) // the reader never blocks once the handler returned
					go func() {
						defer close(msgs)
						for {
							m := new(echo.Message)
							err := stream.RecvMsg(m)
							if err == nil {
								err = stream.SendMsg(m)
							}
							if err != nil {
								msgs <- err
								return
							}
						}
					}()
					select {
					case err := <-msgs:
						if err == io.EOF {
							return nil
						}
						return err
					case q := <-quit:
						if q == "panic" {
							panic("handler panic")
						}
						return status.Error(codes.FailedPrecondition, "handler error")
					}
				}}
				lim := grpcsem.Semaphore(sem, func(context.Context, grpcsem.Call) int64 { return 2 })
				cc := serve(t, tr, svc, append(recovery(), serverLimit(lim)...))
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				s, err := echo.Open(ctx, cc)
				require.NoError(t, err)
				require.NoError(t, s.SendMsg(&echo.Message{Text: "ping"}))
				m := new(echo.Message)
				require.NoError(t, s.RecvMsg(m))
				assert.Equal(t, "ping", m.Text)
				assert.Equal(t, int64(1), sem.Available(), "an open stream holds its units")

				p.end(cancel, s, quit)
				for err = nil; err == nil; err = s.RecvMsg(new(echo.Message)) {
				}
				if p.code == codes.OK {
					assert.ErrorIs(t, err, io.EOF)
				} else {
					assert.Equal(t, p.code, status.Code(err), "%v", err)
				}
				<-handlerDone
				require.Eventually(t, func() bool { return sem.Available() == sem.Capacity() }, 5*time.Second, time.Millisecond,
					"units back once the stream ended")
			})
		}
	}
}

func TestUnaryServer_PanicReleasesUnits(t *testing.T) {
	sem := semaphore.New(1)
	svc := &service{unary: func(context.Context, *echo.Message) (*echo.Message, error) { panic("boom") }}
	cc := serve(t, "bufconn", svc, append(recovery(), serverLimit(grpcsem.Semaphore(sem, nil))...))
	_, err := echo.Call(t.Context(), cc, "x")
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.Equal(t, sem.Capacity(), sem.Available())
}

func TestServer_AdmissionPermitReachesTheHandler(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctrl := admission.New(admission.Resources{Count: 1, Memory: 1 << 20}, admission.WithName("calls"), admission.WithMaxWaiters(1))
			g := newGate()
			svc := &service{unary: func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
				p := grpcsem.PermitFrom(ctx)
				if p == nil || p.Op() != echo.UnaryName || p.Consumed().Memory != 1000 {
					return nil, status.Errorf(codes.Internal, "permit %v", p)
				}
				if in.Text == "hold" {
					return in, g.wait(ctx)
				}
				return in, nil
			}}
			lim := grpcsem.Admission(ctrl, func(context.Context, grpcsem.Call) int64 { return 1000 })
			cc := serve(t, tr, svc, serverLimit(lim))
			holder := holdOne(t, cc, g)
			queued := make(chan error, 1)
			go func() {
				_, err := echo.Call(context.Background(), cc, "queued")
				queued <- err
			}()
			require.Eventually(t, func() bool { return ctrl.Stats().Waiters == 1 }, 5*time.Second, time.Millisecond)
			var trailer metadata.MD
			_, err := echo.Call(t.Context(), cc, "refused", grpc.Trailer(&trailer))
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
			assert.Len(t, trailer.Get(grpcsem.PushbackKey), 1)
			close(g.release)
			require.NoError(t, <-holder)
			require.NoError(t, <-queued)
			ctrl.Break(nil)
			require.NoError(t, ctrl.Drain(t.Context()), "every permit released")
			_, err = echo.Call(t.Context(), cc, "closed", grpc.Trailer(&trailer))
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
		})
	}
}

func TestServer_WeightSeesTheRequestAndTheMetadata(t *testing.T) {
	type seen struct {
		call grpcsem.Call
		md   []string
	}
	calls := make(chan seen, 2)
	sem := semaphore.New(10)
	lim := grpcsem.Semaphore(sem, func(ctx context.Context, c grpcsem.Call) int64 {
		md, _ := metadata.FromIncomingContext(ctx)
		calls <- seen{c, md.Get("tenant")}
		return 1
	})
	cc := serve(t, "bufconn", &service{}, serverLimit(lim))
	ctx := metadata.AppendToOutgoingContext(t.Context(), "tenant", "acme")
	_, err := echo.Call(ctx, cc, "payload")
	require.NoError(t, err)
	u := <-calls
	assert.Equal(t, grpcsem.Call{FullMethod: echo.UnaryName, Request: &echo.Message{Text: "payload"}}, u.call)
	assert.Equal(t, []string{"acme"}, u.md)
	s, err := echo.Open(ctx, cc)
	require.NoError(t, err)
	require.NoError(t, s.CloseSend())
	assert.ErrorIs(t, s.RecvMsg(new(echo.Message)), io.EOF)
	st := <-calls
	assert.Equal(t, grpcsem.Call{FullMethod: echo.StreamName, Stream: true}, st.call, "a stream's first message is not read")
	assert.Equal(t, []string{"acme"}, st.md)
}
