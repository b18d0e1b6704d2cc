// Command grpcsem uses the grpcsem module as a user's program does: a gRPC
// server on 127.0.0.1 behind its unary interceptor serves a call while a unit is
// free and refuses one with ResourceExhausted and a pushback trailer while the
// semaphore is full.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/grpcsem"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func main() {
	sem := semaphore.New(1, semaphore.WithName("published-grpc"))
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(
		grpcsem.UnaryServerInterceptor(grpcsem.Semaphore(sem, nil), grpcsem.WithTimeout(50*time.Millisecond))))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("served with a unit free:", resp.GetStatus())

	u, err := sem.AcquireUnits(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	var trailer metadata.MD
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	u.Release()
	if status.Code(err) != codes.ResourceExhausted || len(trailer.Get(grpcsem.PushbackKey)) != 1 {
		log.Fatalf("call with the unit held: got %v and trailer %v, want ResourceExhausted with %s", err, trailer, grpcsem.PushbackKey)
	}
	fmt.Printf("refused with the unit held: %v, %s=%s\n", status.Code(err), grpcsem.PushbackKey, trailer.Get(grpcsem.PushbackKey)[0])
	fmt.Println("grpcsem: ok:", sem)
}
