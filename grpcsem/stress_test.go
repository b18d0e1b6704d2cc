package grpcsem_test

import (
	"context"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
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

// TestStress_StormOfUnaryCallsAndStreams sends many concurrent unary calls and
// streams, of weights 1..3 (in the metadata), through a client limit and a
// server limit with a bounded backlog and a wait timeout, while some clients
// give up at random moments, waiting or running. Invariants: the server never
// runs more weight than its capacity, every call ends with OK or a code of the
// table, and at the end every unit is back on both sides and nobody waits.
func TestStress_StormOfUnaryCallsAndStreams(t *testing.T) {
	calls := 300
	if testing.Short() {
		calls = 60
	}
	for _, tr := range transports {
		for _, kind := range []string{"semaphore", "admission"} {
			t.Run(tr+"/"+kind, func(t *testing.T) { stormOnce(t, tr, kind, calls) })
		}
	}
}

// stormOnce is one storm, on a semaphore or on an admission controller whose
// memory (100 bytes a unit of weight) is the bound.
func stormOnce(t *testing.T, tr, kind string, calls int) {
	const capacity = 4
	var inFlight atomic.Int64
	weightOf := func(ctx context.Context) int64 {
		md, _ := metadata.FromIncomingContext(ctx)
		n, _ := strconv.ParseInt(first(md.Get("w")), 10, 64)
		return n
	}
	work := func(ctx context.Context) {
		n := weightOf(ctx)
		if now := inFlight.Add(n); now > capacity {
			t.Errorf("%d units in flight, capacity %d", now, capacity)
		}
		for range rand.IntN(2000) { // a little work, of varying length
			_ = rand.Int()
		}
		inFlight.Add(-n)
	}
	svc := &service{
		unary: func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
			work(ctx)
			return in, nil
		},
		stream: func(stream grpc.ServerStream) error {
			work(stream.Context())
			return echoStream(stream)
		},
	}
	server := semaphore.New(capacity, semaphore.WithMaxWaiters(8))
	client := semaphore.New(10 * capacity) // lets more through than the server takes
	serverLim := grpcsem.Semaphore(server, func(ctx context.Context, _ grpcsem.Call) int64 { return weightOf(ctx) })
	ctrl := admission.New(admission.Resources{Count: 100, Memory: 100 * capacity}, admission.WithName("storm"), admission.WithMaxWaiters(8))
	if kind == "admission" {
		serverLim = grpcsem.Admission(ctrl, func(ctx context.Context, _ grpcsem.Call) int64 { return 100 * weightOf(ctx) })
	}
	clientLim := grpcsem.Semaphore(client, func(ctx context.Context, _ grpcsem.Call) int64 {
		md, _ := metadata.FromOutgoingContext(ctx)
		n, _ := strconv.ParseInt(first(md.Get("w")), 10, 64)
		return n
	})
	cc := serve(t, tr, svc, serverLimit(serverLim, grpcsem.WithTimeout(2*time.Millisecond)),
		clientLimit(clientLim)...)

	var wg sync.WaitGroup
	codesSeen := make([]atomic.Int64, 17)
	for i := range calls {
		wg.Go(func() {
			w := int64(1 + i%3)
			ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(t.Context(), "w", strconv.FormatInt(w, 10)))
			defer cancel()
			if rand.IntN(5) == 0 { // a client that gives up at some point
				go func() {
					for range rand.IntN(100) {
						_ = rand.Int()
					}
					cancel()
				}()
			}
			var err error
			if i%2 == 0 {
				_, err = echo.Call(ctx, cc, "x")
			} else {
				err = streamOnce(ctx, cc)
			}
			code := status.Code(err)
			switch code {
			case codes.OK, codes.ResourceExhausted, codes.Canceled:
			default:
				t.Errorf("call %d: %v", i, err)
			}
			codesSeen[code].Add(1)
		})
	}
	wg.Wait()
	t.Logf("ok %d, refused %d, cancelled %d", codesSeen[codes.OK].Load(),
		codesSeen[codes.ResourceExhausted].Load(), codesSeen[codes.Canceled].Load())
	for _, s := range []*semaphore.Semaphore{server, client} {
		require.Eventually(t, func() bool { return s.Available() == s.Capacity() }, 5*time.Second, time.Millisecond,
			"every unit back: %v", s)
		assert.Zero(t, s.Waiters())
	}
	ctrl.Break(nil)
	require.NoError(t, ctrl.Drain(t.Context()), "every permit released")
	assert.Zero(t, ctrl.Stats().Waiters)
}

// streamOnce sends one message on a stream, reads it back and the end.
func streamOnce(ctx context.Context, cc *grpc.ClientConn) error {
	s, err := echo.Open(ctx, cc)
	if err != nil {
		return err
	}
	if err := s.SendMsg(&echo.Message{Text: "x"}); err != nil && err != io.EOF {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if err := s.RecvMsg(new(echo.Message)); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}
