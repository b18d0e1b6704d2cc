package grpcsem_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

// A server that runs at most 64 calls at once, lets 256 wait at most a
// second, and refuses the rest with ResourceExhausted and a pushback trailer.
func ExampleUnaryServerInterceptor() {
	sem := semaphore.New(64, semaphore.WithMaxWaiters(256))
	lim := grpcsem.Semaphore(sem, nil)
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcsem.UnaryServerInterceptor(lim, grpcsem.WithTimeout(time.Second))),
		grpc.ChainStreamInterceptor(grpcsem.StreamServerInterceptor(lim, grpcsem.WithTimeout(time.Second))))
	defer srv.Stop()
}

// What a client sees when the server's queue is full.
func ExampleUnaryServerInterceptor_refusal() {
	sem := semaphore.New(1, semaphore.WithMaxWaiters(0))
	sem.Consume(1) // busy
	lim := grpcsem.Semaphore(sem, nil)
	srv := echo.NewServer(&service{}, grpc.ChainUnaryInterceptor(grpcsem.UnaryServerInterceptor(lim)))
	lis := bufconn.Listen(1 << 16)
	go srv.Serve(lis)
	defer srv.Stop()
	cc, _ := grpc.NewClient("passthrough:///bufconn", echo.CodecOption(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	defer cc.Close()

	var trailer metadata.MD
	_, err := echo.Call(context.Background(), cc, "hello", grpc.Trailer(&trailer))
	st := status.Convert(err)
	fmt.Println(st.Code(), st.Message())
	fmt.Println("pushback trailer sent:", len(trailer.Get(grpcsem.PushbackKey)) == 1)
	// Output:
	// ResourceExhausted grpcsem: overloaded: wait queue full
	// pushback trailer sent: true
}

// Weights per method: a heavy export takes 8 of the 64 units.
func ExampleMethodWeights() {
	sem := semaphore.New(64)
	weight := grpcsem.MethodWeights(map[string]int64{"/reports.Reports/Export": 8}, 1)
	_ = grpc.NewServer(grpc.ChainUnaryInterceptor(grpcsem.UnaryServerInterceptor(grpcsem.Semaphore(sem, weight))))
}

// A weight from the request's metadata.
func ExampleSemaphore_metadata() {
	sem := semaphore.New(1 << 30) // bytes
	weight := func(ctx context.Context, _ grpcsem.Call) int64 {
		md, _ := metadata.FromIncomingContext(ctx)
		var n int64
		if v := md.Get("x-upload-size"); len(v) == 1 {
			fmt.Sscan(v[0], &n)
		}
		return min(max(n, 1), sem.Capacity())
	}
	_ = grpc.NewServer(grpc.ChainStreamInterceptor(grpcsem.StreamServerInterceptor(grpcsem.Semaphore(sem, weight))))
}

// A handler gives back part of its units early, once the expensive part is
// done.
func ExampleUnitsFrom() {
	handler := func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
		u := grpcsem.UnitsFrom(ctx) // 4 units, say
		// ... the expensive part ...
		_ = u.Return(3) // keep 1 for the rest; the interceptor releases it
		return in, nil
	}
	_ = handler
}

// Admission through a controller; the handler accounts its memory on the
// permit.
func ExamplePermitFrom() {
	ctrl := admission.New(admission.Resources{Count: 100, Memory: 256 << 20}, admission.WithName("rpc"),
		admission.WithMaxWaiters(1000))
	estimate := func(_ context.Context, c grpcsem.Call) int64 {
		if m, ok := c.Request.(*echo.Message); ok {
			return int64(len(m.Text)) * 4
		}
		return 64 << 10 // a stream
	}
	_ = grpc.NewServer(grpc.ChainUnaryInterceptor(grpcsem.UnaryServerInterceptor(grpcsem.Admission(ctrl, estimate))))

	handler := func(ctx context.Context, in *echo.Message) (*echo.Message, error) {
		p := grpcsem.PermitFrom(ctx)
		if err := p.Consume(admission.Resources{Memory: 1 << 20}); err != nil {
			return nil, status.Error(codes.ResourceExhausted, err.Error())
		}
		return in, nil
	}
	_ = handler
}

// A client that sends at most 16 calls at once to its backend, FIFO, each
// waiting at most 100ms for its turn.
func ExampleUnaryClientInterceptor() {
	lim := grpcsem.Semaphore(semaphore.New(16), nil)
	cc, err := grpc.NewClient("dns:///backend:443",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(grpcsem.UnaryClientInterceptor(lim, grpcsem.WithTimeout(100*time.Millisecond))),
		grpc.WithChainStreamInterceptor(grpcsem.StreamClientInterceptor(lim, grpcsem.WithTimeout(100*time.Millisecond))))
	if err == nil {
		cc.Close()
	}
}

// One interceptor for every connection, each target bounded on its own.
func ExamplePerTarget() {
	lim := grpcsem.PerTarget(func(target string) grpcsem.Limiter {
		return grpcsem.Semaphore(semaphore.New(16, semaphore.WithName(target)), nil)
	})
	_ = grpc.WithChainUnaryInterceptor(grpcsem.UnaryClientInterceptor(lim))
}
