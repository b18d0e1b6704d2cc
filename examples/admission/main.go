// Command admission runs an HTTP server on 127.0.0.1 whose handler admits each
// request through an admission.Controller, with the request's estimated memory as
// its cost and its deadline as its time budget. It drives the same overload burst
// twice, without and then with load shedding, and prints for each the outcomes,
// the latency percentiles of the admitted requests, the stats and a diagnostics
// dump taken at the peak. Shedding refuses early what would wait too long, so the
// requests it admits finish faster.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fairsem/semaphore/admission"
)

const (
	requests = 400
	clients  = 64
	budget   = 150 * time.Millisecond // each request's deadline on the server
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "admission:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	for _, shed := range []bool{false, true} {
		if err := burst(out, shed); err != nil {
			return err
		}
	}
	return nil
}

// burst serves one overload burst with a fresh controller.
func burst(out io.Writer, shed bool) error {
	opts := []admission.Option{admission.WithCPUConcurrency(2)}
	title := "without shedding"
	if shed {
		title = "with shedding (queue bound 16, shed factor 0.5)"
		opts = append(opts, admission.WithMaxQueueLength(16), admission.WithShedFactor(0.5))
	}
	ctrl := admission.New("api", admission.Resources{Count: 8, Memory: 8 << 20}, opts...)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler(ctrl)}
	go srv.Serve(ln)
	defer srv.Close()

	// Snapshot the diagnostics when the queue is at its longest.
	var peakMu sync.Mutex
	peak, peakDump := -1, ""
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if q := ctrl.Stats().Queued; q > peak {
				peakMu.Lock()
				peak, peakDump = q, ctrl.Diagnostics(6)
				peakMu.Unlock()
			}
		}
	}()

	codes, latencies, err := load("http://" + ln.Addr().String())
	close(stopWatch)
	<-watched
	if err != nil {
		return err
	}
	slices.Sort(latencies)
	st := ctrl.Stats()
	fmt.Fprintf(out, "== %s\n", title)
	fmt.Fprintf(out, "%d requests: %d admitted and served, %d shed (503), %d timed out waiting (504)\n",
		requests, codes[http.StatusOK], codes[http.StatusServiceUnavailable], codes[http.StatusGatewayTimeout])
	fmt.Fprintf(out, "latency of served requests: p50 %v, p90 %v, p99 %v\n",
		pct(latencies, 50), pct(latencies, 90), pct(latencies, 99))
	fmt.Fprintf(out, "stats: admitted %d (%d at once), queued %d (count %d, memory %d, cpu %d), shed %d, timed out %d\n",
		st.Admitted, st.AdmittedImmediately, st.QueuedForAdmission, st.QueuedBecauseCount, st.QueuedBecauseMemory,
		st.QueuedBecauseCPU, st.Shed, st.TimedOut)
	fmt.Fprintf(out, "diagnostics at the peak (%d queued):\n%s\n", peak, peakDump)

	if err := ctrl.Close(context.Background()); err != nil {
		return err
	}
	if codes[http.StatusOK] == 0 || st.Used != (admission.Resources{}) {
		return fmt.Errorf("served %d, %v still in use", codes[http.StatusOK], st.Used)
	}
	return nil
}

// handler admits each request with its estimated memory, then does its work: a
// little CPU, then waiting on a backend (Await), then a little CPU again.
func handler(ctrl *admission.Controller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cost, _ := strconv.ParseInt(r.URL.Query().Get("kib"), 10, 64)
		ctx, cancel := context.WithTimeout(r.Context(), budget)
		defer cancel()
		err := ctrl.Do(ctx, r.URL.Path, cost<<10, func(ctx context.Context, p *admission.Permit) error {
			doneCPU := p.NeedCPU()
			defer doneCPU()
			spin(200 * time.Microsecond)
			doneAwait := p.Await()
			time.Sleep(5 * time.Millisecond) // the backend call
			doneAwait()
			spin(200 * time.Microsecond)
			return nil
		})
		switch {
		case err == nil:
			fmt.Fprintln(w, "ok")
		case errors.Is(err, admission.ErrQueueFull), errors.Is(err, admission.ErrShed):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			http.Error(w, err.Error(), http.StatusGatewayTimeout)
		}
	})
}

func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// load sends the burst from a pool of clients and returns the status codes and the
// latencies of the successful requests.
func load(base string) (map[int]int, []time.Duration, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	codes := map[int]int{}
	var latencies []time.Duration
	var firstErr error
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range jobs {
				start := time.Now()
				resp, err := client.Get(fmt.Sprintf("%s/query?kib=%d", base, 64+(i*97)%1024))
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[resp.StatusCode]++
				if resp.StatusCode == http.StatusOK {
					latencies = append(latencies, time.Since(start))
				}
				mu.Unlock()
			}
		})
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return codes, latencies, firstErr
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100].Round(100 * time.Microsecond)
}
