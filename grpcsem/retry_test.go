package grpcsem_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

// retryPolicy is a grpc-go client's service config retrying the overload
// codes up to 3 attempts, with its own backoff short enough that a test would
// see a retry at once.
const retryPolicy = `{"methodConfig": [{
	"name": [{"service": "` + echo.Service + `"}],
	"retryPolicy": {
		"maxAttempts": 3,
		"initialBackoff": "0.001s",
		"maxBackoff": "0.001s",
		"backoffMultiplier": 1,
		"retryableStatusCodes": ["RESOURCE_EXHAUSTED", "UNAVAILABLE"]
	}
}]}`

// retrying returns a client with the retry policy to a server whose limiter
// admits through sem, counted, with the options.
func retrying(t *testing.T, tr string, sem *semaphore.Semaphore, svc *service, opts ...grpcsem.Option) (*grpc.ClientConn, *counting) {
	lim := &counting{Limiter: grpcsem.Semaphore(sem, nil)}
	cc := serve(t, tr, svc, serverLimit(lim, opts...), grpc.WithDefaultServiceConfig(retryPolicy))
	return cc, lim
}

func TestRetry_ClientWaitsForThePushback(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			sem := semaphore.New(1, semaphore.WithMaxWaiters(0))
			sem.Consume(1)
			cc, lim := retrying(t, tr, sem, &service{}, grpcsem.WithPushback(time.Hour))
			ready(t, cc) // so that the first attempt reaches the server well within the deadline
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			_, err := echo.Call(ctx, cc, "x")
			assert.Equal(t, codes.DeadlineExceeded, status.Code(err),
				"the client waits the pushback (an hour), not its 1ms backoff: %v", err)
			assert.Equal(t, int64(1), lim.admits.Load(), "no retry before the pushback")
		})
	}
}

func TestRetry_WithoutPushbackTheClientBacksOffByItself(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			sem := semaphore.New(1, semaphore.WithMaxWaiters(0))
			sem.Consume(1)
			cc, lim := retrying(t, tr, sem, &service{}, grpcsem.WithPushback(0))
			_, err := echo.Call(t.Context(), cc, "x")
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
			assert.Equal(t, int64(3), lim.admits.Load(), "every attempt the policy allows")
		})
	}
}

// TestRetry_RetriedAfterThePushbackSucceeds frees the server's units when it
// refuses the first attempt; the retry, after the pushback, is admitted.
func TestRetry_RetriedAfterThePushbackSucceeds(t *testing.T) {
	for _, tr := range transports {
		for _, kind := range []string{"unary", "stream"} {
			t.Run(tr+"/"+kind, func(t *testing.T) {
				sem := semaphore.New(1, semaphore.WithMaxWaiters(0))
				sem.Consume(1)
				refused := make(chan struct{})
				obs := &refusalHook{Limiter: grpcsem.Semaphore(sem, nil), refused: refused}
				attempts := make(chan []string, 1)
				svc := &service{
					unary: func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
						md, _ := metadata.FromIncomingContext(ctx)
						attempts <- md.Get("grpc-previous-rpc-attempts")
						return in, nil
					},
					stream: func(stream grpc.ServerStream) error {
						md, _ := metadata.FromIncomingContext(stream.Context())
						attempts <- md.Get("grpc-previous-rpc-attempts")
						return echoStream(stream)
					},
				}
				cc := serve(t, tr, svc, serverLimit(obs, grpcsem.WithPushback(20*time.Millisecond)),
					grpc.WithDefaultServiceConfig(retryPolicy))
				go func() {
					<-refused
					sem.Release(1)
				}()
				if kind == "unary" {
					_, err := echo.Call(t.Context(), cc, "x")
					require.NoError(t, err)
				} else {
					s, err := echo.Open(t.Context(), cc)
					require.NoError(t, err)
					require.NoError(t, s.SendMsg(&echo.Message{Text: "x"}))
					require.NoError(t, s.CloseSend())
					require.NoError(t, s.RecvMsg(new(echo.Message)))
					assert.ErrorIs(t, s.RecvMsg(new(echo.Message)), io.EOF)
				}
				assert.Equal(t, []string{"1"}, <-attempts, "admitted on the second attempt")
				assert.Equal(t, sem.Capacity(), sem.Available())
			})
		}
	}
}

// ready connects cc and waits until it is ready.
func ready(t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		require.True(t, cc.WaitForStateChange(t.Context(), s), "connecting: %v", s)
	}
}

// refusalHook closes refused when its limiter first refuses a call.
type refusalHook struct {
	grpcsem.Limiter
	refused chan struct{}
}

func (h *refusalHook) Admit(ctx context.Context, call grpcsem.Call) (grpcsem.Token, error) {
	tok, err := h.Limiter.Admit(ctx, call)
	if err != nil {
		select {
		case <-h.refused:
		default:
			close(h.refused)
		}
	}
	return tok, err
}

func TestRetry_TooLargeIsNotRetried(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			sem := semaphore.New(1)
			lim := &counting{Limiter: grpcsem.Semaphore(sem, func(context.Context, grpcsem.Call) int64 { return 2 })}
			cc := serve(t, tr, &service{}, serverLimit(lim), grpc.WithDefaultServiceConfig(retryPolicy))
			_, err := echo.Call(t.Context(), cc, "x")
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
			assert.Equal(t, int64(1), lim.admits.Load(), "pushback -1: the client does not retry")
		})
	}
}

func TestRetry_BrokenIsRetriedWithTheClientsBackoff(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			sem := semaphore.New(1)
			sem.Break(nil)
			cc, lim := retrying(t, tr, sem, &service{}, grpcsem.WithOverloadCode(codes.Unavailable))
			_, err := echo.Call(t.Context(), cc, "x")
			assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			assert.Equal(t, int64(3), lim.admits.Load(), "no pushback: every attempt the policy allows")
		})
	}
}
