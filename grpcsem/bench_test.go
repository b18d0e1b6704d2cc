package grpcsem_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

// BenchmarkUnaryServerInterceptor measures what the interceptor adds to a
// call, called directly (no transport): admission by a semaphore with free
// units, the handler, the release; with and without WithTimeout.
func BenchmarkUnaryServerInterceptor(b *testing.B) {
	info := &grpc.UnaryServerInfo{FullMethod: echo.UnaryName}
	handler := func(ctx context.Context, req any) (any, error) { return req, nil }
	for _, bc := range []struct {
		name string
		opts []grpcsem.Option
	}{{"no timeout", nil}, {"timeout", []grpcsem.Option{grpcsem.WithTimeout(time.Second)}}} {
		b.Run(bc.name, func(b *testing.B) {
			ic := grpcsem.UnaryServerInterceptor(grpcsem.Semaphore(semaphore.New(1<<20), nil), bc.opts...)
			ctx, req := context.Background(), &echo.Message{Text: "x"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ic(ctx, req, info, handler); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUnaryCall measures a whole unary call over bufconn, without and
// with the server interceptor (semaphore with free units), for the
// interceptor's share of a real call.
func BenchmarkUnaryCall(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []grpc.ServerOption
	}{{"bare", nil}, {"grpcsem", serverLimit(grpcsem.Semaphore(semaphore.New(1<<20), nil))}} {
		b.Run(bc.name, func(b *testing.B) {
			cc := serve(b, "bufconn", &service{}, bc.opts)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := echo.Call(ctx, cc, "x"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
