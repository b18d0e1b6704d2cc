// Command capacitydrop serves HTTP on 127.0.0.1 behind an adaptive limiter
// whose backend loses three quarters of its capacity mid-run and gets it back,
// drives an open-loop load at it itself, and prints, every quarter of a
// second, the backend's capacity against the limit the limiter found, its
// estimate of the capacity, and the requests served. It exits after 4.5s.
//
// The backend serves up to its capacity at 40ms; past it, the requests share
// it and each takes longer (processor sharing). The load is 1.2 times what the
// full backend serves, so the limit, not the load, bounds what is in flight.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/httpsem"
)

const (
	base = 40 * time.Millisecond
	full = 16 // the backend's capacity, before and after the drop
)

// load is how long each of the three phases (full, a quarter, full again)
// lasts; a row is printed every sixth of a phase.
type load struct{ phase time.Duration }

// result is what one run counted.
type result struct {
	sent    int64 // requests the load sent
	served  int64 // answered 200
	refused int64 // answered another status: the limiter refused them
	failed  int64 // ended without an answer (the client's timeout)
	limiter adaptive.Stats
}

func main() {
	if _, err := run(os.Stdout, load{phase: 1500 * time.Millisecond}); err != nil {
		fmt.Fprintln(os.Stderr, "capacitydrop:", err)
		os.Exit(1)
	}
}

// backend is processor sharing with a capacity that changes.
type backend struct {
	capacity atomic.Int64
	inFlight atomic.Int64
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	d := base
	if c := b.capacity.Load(); n > c {
		d = time.Duration(int64(base) * n / c)
	}
	select {
	case <-time.After(d):
		io.WriteString(w, "ok\n")
	case <-r.Context().Done():
	}
}

// run drives the load through the three phases, prints a row every sixth of a
// phase, and returns the counts once every request has ended.
func run(out io.Writer, ld load) (result, error) {
	phaseLen, tick := ld.phase, ld.phase/6
	be := &backend{}
	be.capacity.Store(full)
	sem := semaphore.New(full, semaphore.WithName("backend"))
	l := adaptive.New(sem, nil) // Capacity, from the semaphore's 16
	srv := &http.Server{Handler: httpsem.Adaptive(l, httpsem.WithTimeout(100*time.Millisecond))(be)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

	var sent, served, refused, failed atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 3*phaseLen)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { // Poisson arrivals at 1.2x what the full backend serves
		rate := 1.2 * full / base.Seconds()
		r := rand.New(rand.NewPCG(1, 2))
		for next := time.Now(); ctx.Err() == nil; {
			next = next.Add(time.Duration(r.ExpFloat64() / rate * float64(time.Second)))
			time.Sleep(time.Until(next))
			sent.Add(1)
			wg.Go(func() {
				resp, err := client.Get(url)
				if err != nil {
					failed.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					served.Add(1)
				} else {
					refused.Add(1)
				}
			})
		}
	})

	fmt.Fprintln(out, "time  capacity  limit  estimate  served/s")
	start := time.Now()
	t := time.NewTicker(tick)
	defer t.Stop()
	var last int64
	for range t.C {
		at := time.Since(start)
		if at > 3*phaseLen {
			break
		}
		switch at / phaseLen { // full, a quarter, full again
		case 1:
			be.capacity.Store(full / 4)
		default:
			be.capacity.Store(full)
		}
		st := l.Stats()
		s := served.Load()
		fmt.Fprintf(out, "%4.2fs  %8d  %5d  %8d  %8.0f\n", at.Seconds(), be.capacity.Load(), st.Limit, st.Estimate,
			float64(s-last)/tick.Seconds())
		last = s
	}
	cancel()
	wg.Wait()
	// Shutdown returns once every handler has returned, so the limiter has
	// taken every call back before its counters are read.
	if err := srv.Shutdown(context.Background()); err != nil {
		return result{}, err
	}
	return result{sent: sent.Load(), served: served.Load(), refused: refused.Load(), failed: failed.Load(),
		limiter: l.Stats()}, nil
}
