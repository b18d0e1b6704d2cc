// Command httplimit serves HTTP on 127.0.0.1 behind the httpsem middleware and
// drives an overload burst at it itself.
//
// /search is limited by a semaphore: 4 requests in flight, 8 waiting, none
// waiting more than 20ms; the rest are refused at once with 503 and Retry-After
// instead of piling up. /report is admitted by an admission.Controller by count
// and estimated memory, and its handler sees its permit. The program prints the
// outcomes, the peak concurrency against the limit, and what happened to a
// client that gave up while waiting, then exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/httpsem"
)

const (
	limit   = 4
	backlog = 8
	burst   = 60
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "httplimit:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	searches := semaphore.New(limit, semaphore.WithMaxWaiters(backlog), semaphore.WithName("search"))
	reports := admission.New(admission.Resources{Count: 2, Memory: 8 << 20}, admission.WithName("reports"))

	var active, peak atomic.Int64
	hold := make(chan struct{}) // closed to let every held search finish
	search := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := active.Add(1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		defer active.Add(-1)
		if r.URL.Query().Has("hold") {
			<-hold
		} else {
			time.Sleep(5 * time.Millisecond) // the work a real search would do
		}
		io.WriteString(w, "results\n")
	})
	report := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := httpsem.PermitFrom(r.Context())
		fmt.Fprintf(w, "%s admitted with %d bytes\n", p.Op(), p.Consumed().Memory)
	})

	mux := http.NewServeMux()
	mux.Handle("GET /search", httpsem.Limit(searches, httpsem.WithTimeout(20*time.Millisecond))(search))
	// The same limit with no wait timeout: a wait there ends only by a grant or by
	// the client going away.
	mux.Handle("GET /export", httpsem.Limit(searches)(search))
	mux.Handle("GET /report/{id}", httpsem.Admit(reports,
		httpsem.WithMemory(func(*http.Request) int64 { return 2 << 20 }))(report))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		<-served
	}()
	tr := &http.Transport{MaxIdleConnsPerHost: burst}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	base := "http://" + ln.Addr().String()

	// 1. A burst much larger than limit + backlog.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	retryAfter := ""
	for range burst {
		wg.Go(func() {
			resp, err := client.Get(base + "/search")
			if err != nil {
				fmt.Fprintln(out, "client:", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusServiceUnavailable {
				retryAfter = resp.Header.Get("Retry-After")
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Fprintf(out, "burst of %d: %d served, %d refused with 503 (Retry-After: %q)\n",
		burst, codes[http.StatusOK], codes[http.StatusServiceUnavailable], retryAfter)
	fmt.Fprintf(out, "at most %d searches at once (limit %d)\n", peak.Load(), limit)
	if peak.Load() > limit {
		return fmt.Errorf("peak %d exceeded the limit %d", peak.Load(), limit)
	}
	if codes[http.StatusOK]+codes[http.StatusServiceUnavailable] != burst {
		return errors.New("some requests got neither 200 nor 503")
	}

	// 2. A client that gives up while waiting on /export (no wait timeout, so only
	// giving up ends its wait): fill the limit with held searches, then send one
	// more and cancel it once it waits.
	var held sync.WaitGroup
	for range limit {
		held.Go(func() {
			if resp, err := client.Get(base + "/search?hold"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	if err := waitUntil(func() bool { return searches.Available() == 0 }); err != nil {
		return err
	}
	before := searches.Stats().Cancelled
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/export", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gaveUp <- err
	}()
	if err := waitUntil(func() bool { return searches.Waiters() == 1 }); err != nil {
		cancel()
		return err
	}
	cancel()
	fmt.Fprintln(out, "the client that gave up saw:", errors.Is(<-gaveUp, context.Canceled))
	if err := waitUntil(func() bool { return searches.Waiters() == 0 }); err != nil {
		return err
	}
	fmt.Fprintln(out, "its request left the queue; cancelled waits:", searches.Stats().Cancelled-before)
	close(hold)
	held.Wait()

	// 3. A report, admitted by count and memory.
	resp, err := client.Get(base + "/report/7")
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Fprint(out, string(body))
	return nil
}

// waitUntil polls cond until it holds, for at most ten seconds.
func waitUntil(cond func() bool) error {
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("timed out waiting for the server")
		}
	}
	return nil
}
