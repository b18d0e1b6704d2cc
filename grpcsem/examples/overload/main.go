// Command overload runs a gRPC server on 127.0.0.1 behind grpcsem's
// interceptors (4 calls at once, 8 waiting) and sends it bursts of 40 calls:
// from a plain client, which sees the refusals with their pushback trailer;
// from a client whose retry policy follows the pushback; and from a client
// that bounds its own calls with grpcsem's client interceptors, so that it
// never floods the server. It prints what each client saw, and the server's
// Diagnostics taken at its peak, when its wait queue was full.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/grpcsem"
	"github.com/fairsem/semaphore/grpcsem/internal/echo"
)

const (
	capacity = 4  // calls the server runs at once
	backlog  = 8  // calls that may wait
	burst    = 40 // calls a client sends at once
	work     = 50 * time.Millisecond
)

// retryPolicy lets a client retry the overload code up to 5 attempts; the
// server's pushback sets the delay.
const retryPolicy = `{"methodConfig": [{
	"name": [{"service": "` + echo.Service + `"}],
	"retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "1s",
		"backoffMultiplier": 2, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}
}]}`

func main() {
	sem := semaphore.New(capacity, semaphore.WithMaxWaiters(backlog),
		semaphore.WithName("echo-server"), semaphore.WithHolderTracking())
	peak := &peakLimiter{Limiter: grpcsem.Semaphore(sem, nil), sem: sem}
	srv := echo.NewServer(service{},
		grpc.ChainUnaryInterceptor(grpcsem.UnaryServerInterceptor(peak, grpcsem.WithTimeout(time.Second))),
		grpc.ChainStreamInterceptor(grpcsem.StreamServerInterceptor(peak, grpcsem.WithTimeout(time.Second))))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	fmt.Printf("server on %s: %d calls at once, %d waiting, %v of work each\n\n", lis.Addr(), capacity, backlog, work)

	fmt.Printf("plain client, a burst of %d calls (every 4th a stream):\n", burst)
	report(run(dial(lis.Addr().String())))
	seen := serverSaw(sem, semaphore.Stats{})

	fmt.Printf("\nclient with a retry policy, a burst of %d calls:\n", burst)
	report(run(dial(lis.Addr().String(), grpc.WithDefaultServiceConfig(retryPolicy))))
	seen = serverSaw(sem, seen)

	client := semaphore.New(capacity, semaphore.WithName("client"))
	lim := grpcsem.Semaphore(client, nil)
	fmt.Printf("\nclient bounded by grpcsem's client interceptors to %d at once, a burst of %d calls:\n", capacity, burst)
	report(run(dial(lis.Addr().String(),
		grpc.WithChainUnaryInterceptor(grpcsem.UnaryClientInterceptor(lim)),
		grpc.WithChainStreamInterceptor(grpcsem.StreamClientInterceptor(lim)))))
	serverSaw(sem, seen)

	fmt.Printf("\nthe server's Diagnostics at its peak (the first refusal for a full queue):\n%s\n", peak.dump())
	if sem.Available() != sem.Capacity() || client.Available() != client.Capacity() {
		log.Fatalf("units still held: %v, %v", sem, client)
	}
	fmt.Printf("at the end: %v; %v\n", sem, client)
}

// service works for a while on every call.
type service struct{}

func (service) Unary(ctx context.Context, in *echo.Message) (*echo.Message, error) {
	select {
	case <-time.After(work):
		return in, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

func (service) Stream(stream grpc.ServerStream) error {
	m := new(echo.Message)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	time.Sleep(work)
	return stream.SendMsg(m)
}

// peakLimiter takes the semaphore's Diagnostics the first time the queue is
// full: the moment of the longest wait list.
type peakLimiter struct {
	grpcsem.Limiter
	sem *semaphore.Semaphore

	mu   sync.Mutex
	diag string // guarded by mu; the first dump
}

func (p *peakLimiter) Admit(ctx context.Context, call grpcsem.Call) (grpcsem.Token, error) {
	tok, err := p.Limiter.Admit(ctx, call)
	if o, _ := semaphore.OutcomeOf(err); err != nil && o == semaphore.QueueFull {
		p.mu.Lock()
		if p.diag == "" {
			p.diag = p.sem.Diagnostics(10)
		}
		p.mu.Unlock()
	}
	return tok, err
}

func (p *peakLimiter) dump() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "  " + strings.ReplaceAll(strings.TrimSpace(p.diag), "\n", "\n  ")
}

// serverSaw prints the attempts the server admitted and refused since before,
// and returns its stats now.
func serverSaw(sem *semaphore.Semaphore, before semaphore.Stats) semaphore.Stats {
	now := sem.Stats()
	fmt.Printf("  the server admitted %d attempts, refused %d\n", now.Acquired-before.Acquired, now.Rejected-before.Rejected)
	return now
}

func dial(addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	cc, err := grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()), echo.CodecOption()}, opts...)...)
	if err != nil {
		log.Fatal(err)
	}
	return cc
}

// result is what one call saw.
type result struct {
	code     codes.Code
	pushback string
	took     time.Duration
}

// run sends a burst of calls at once on cc, then closes it.
func run(cc *grpc.ClientConn) []result {
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results := make([]result, burst)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range burst {
		wg.Go(func() {
			var trailer metadata.MD
			var err error
			if i%4 == 3 {
				err = streamCall(ctx, cc, &trailer)
			} else {
				_, err = echo.Call(ctx, cc, "hello", grpc.Trailer(&trailer))
			}
			results[i] = result{code: status.Code(err), took: time.Since(start)}
			if v := trailer.Get(grpcsem.PushbackKey); len(v) > 0 {
				results[i].pushback = v[0]
			}
		})
	}
	wg.Wait()
	return results
}

func streamCall(ctx context.Context, cc *grpc.ClientConn, trailer *metadata.MD) error {
	s, err := echo.Open(ctx, cc)
	if err != nil {
		return err
	}
	defer func() { *trailer = s.Trailer() }()
	if err := s.SendMsg(&echo.Message{Text: "hello"}); err != nil && err != io.EOF {
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

// report prints how many calls ended with each code, the pushback values seen,
// and when the last call ended.
func report(results []result) {
	byCode := map[codes.Code]int{}
	var pushbacks []int
	var last time.Duration
	for _, r := range results {
		byCode[r.code]++
		if ms, err := strconv.Atoi(r.pushback); err == nil {
			pushbacks = append(pushbacks, ms)
		}
		last = max(last, r.took)
	}
	var lines []string
	for code, n := range byCode {
		lines = append(lines, fmt.Sprintf("  %-18s %d", code, n))
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	if len(pushbacks) > 0 {
		fmt.Printf("  pushback trailers: %d, from %dms to %dms\n", len(pushbacks), slices.Min(pushbacks), slices.Max(pushbacks))
	}
	fmt.Printf("  all done after %v\n", last.Round(10*time.Millisecond))
}
