package grpcsem_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

// service implements echo.Server with the test's functions; a nil one echoes.
type service struct {
	unary  func(ctx context.Context, in *echo.Message) (*echo.Message, error)
	stream func(stream grpc.ServerStream) error
}

func (s *service) Unary(ctx context.Context, in *echo.Message) (*echo.Message, error) {
	if s.unary == nil {
		return in, nil
	}
	return s.unary(ctx, in)
}

func (s *service) Stream(stream grpc.ServerStream) error {
	if s.stream == nil {
		return echoStream(stream)
	}
	return s.stream(stream)
}

// echoStream sends back every message until the client closes its side.
func echoStream(stream grpc.ServerStream) error {
	for {
		m := new(echo.Message)
		if err := stream.RecvMsg(m); err != nil {
			return nil // io.EOF, or the client went away
		}
		if err := stream.SendMsg(m); err != nil {
			return err
		}
	}
}

// transports are the two ways the tests reach a server.
var transports = []string{"bufconn", "tcp"}

// serve starts svc behind the server options on the transport ("bufconn" or
// "tcp" on 127.0.0.1) and returns a client connection with the dial options;
// both are stopped when the test ends.
func serve(t testing.TB, transport string, svc echo.Server, sopts []grpc.ServerOption, dopts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	srv := echo.NewServer(svc, sopts...)
	var lis net.Listener
	var target string
	base := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), echo.CodecOption()}
	switch transport {
	case "bufconn":
		bl := bufconn.Listen(1 << 20)
		lis, target = bl, "passthrough:///bufconn"
		base = append(base, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return bl.DialContext(ctx)
		}))
	case "tcp":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lis, target = l, "passthrough:///"+l.Addr().String()
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	cc, err := grpc.NewClient(target, append(base, dopts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
		<-served
	})
	return cc
}

// serverLimit returns the server options of both interceptors on l.
func serverLimit(l grpcsem.Limiter, opts ...grpcsem.Option) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(grpcsem.UnaryServerInterceptor(l, opts...)),
		grpc.ChainStreamInterceptor(grpcsem.StreamServerInterceptor(l, opts...)),
	}
}

// counting is a Limiter that counts the calls it is asked to admit.
type counting struct {
	grpcsem.Limiter
	admits atomic.Int64
}

func (c *counting) Admit(ctx context.Context, call grpcsem.Call) (grpcsem.Token, error) {
	c.admits.Add(1)
	return c.Limiter.Admit(ctx, call)
}

// gate is a handler body that reports that it runs and waits to be let go.
type gate struct {
	running chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{running: make(chan struct{}, 100), release: make(chan struct{})} }

func (g *gate) wait(ctx context.Context) error {
	g.running <- struct{}{}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
