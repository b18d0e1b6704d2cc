// Command debugpage serves the semaphores debug page over a live workload with
// a stall in it: a "report-lock" semaphore whose only unit a nightly report has
// held since the start, with jobs queueing behind it, next to a database pool, a
// cache, an admission controller and an adaptive limiter in front of a backend
// that serves four calls at once, which keep serving. It prints the page's URL;
// open it to see the stalled row marked and first, its page naming the holder's
// label and acquire site, and the adaptive limiter's limit, capacity estimate,
// calls in flight and waiters.
//
// With -for it exits by itself after that long (0: serve until interrupted). It
// shuts down by breaking every semaphore, which fails the waiters, and waits for
// every goroutine it started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/semdebug"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to serve on")
	serveFor := flag.Duration("for", 3*time.Second, "exit after this long; 0 serves until interrupted")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *serveFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *serveFor)
		defer cancel()
	}
	if err := run(ctx, *addr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "debugpage:", err)
		os.Exit(1)
	}
}

// run serves the page over the workload until ctx ends.
func run(ctx context.Context, addr string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	w := startWorkload()
	defer w.stop()

	mux := http.NewServeMux()
	mux.Handle("/debug/semaphores/", semdebug.Handler(semdebug.WithStallThreshold(time.Second)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(out, "serving http://%s/debug/semaphores/\n", ln.Addr())

	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// workload runs the goroutines that use the semaphores.
type workload struct {
	sems     []*semaphore.Semaphore
	ctrl     *admission.Controller
	api      *semaphore.Semaphore // the semaphore the adaptive limiter drives
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	cleanups []func()
}

func startWorkload() *workload {
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{cancel: cancel}
	track := semaphore.WithHolderTracking()
	db := semaphore.New(8, semaphore.WithName("db-pool"), track)
	cache := semaphore.New(32, semaphore.WithName("cache"), track)
	reportLock := semaphore.New(1, semaphore.WithName("report-lock"), track)
	w.sems = []*semaphore.Semaphore{db, cache, reportLock}
	w.ctrl = admission.New(admission.Resources{Count: 16, Memory: 64 << 20}, admission.WithName("reads"))
	for _, s := range w.sems {
		// Record samples from the start, so that the charts have a history by the
		// time someone opens the page.
		w.cleanups = append(w.cleanups, semdebug.Register(s), semdebug.Record(s))
	}
	w.cleanups = append(w.cleanups, semdebug.Register(w.ctrl))
	// An adaptive limiter finds the capacity of a backend that serves four calls
	// at once and queues the rest: its page shows the limit, its estimate, the
	// calls in flight and those waiting.
	w.api = semaphore.New(8, semaphore.WithName("api"))
	api := adaptive.New(w.api, nil)
	w.cleanups = append(w.cleanups, semdebug.Register(api), semdebug.Record(api))
	backend := make(chan struct{}, 4)

	// The stall: a nightly report took the report lock and is stuck.
	held := make(chan struct{})
	w.wg.Go(func() {
		u, err := reportLock.AcquireUnits(semaphore.ContextWithHolderLabel(ctx, "nightly-report"), 1)
		close(held)
		if err != nil {
			return
		}
		<-ctx.Done()
		u.Release()
	})
	<-held
	// Jobs that need the lock queue behind it, one more every half second.
	w.wg.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				w.wg.Go(func() {
					if reportLock.Acquire(ctx, 1) == nil {
						reportLock.Release(1)
					}
				})
			}
		}
	})
	// Calls to the backend through the limiter, more than it serves at once.
	for i := range 8 {
		w.wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			for ctx.Err() == nil {
				api.Do(ctx, func(ctx context.Context) error {
					select { // the backend's own queue
					case backend <- struct{}{}:
					case <-ctx.Done():
						return ctx.Err()
					}
					pause(ctx, time.Duration(20+rng.IntN(20))*time.Millisecond)
					<-backend
					return nil
				})
			}
		})
	}
	// Healthy traffic: short holds on the pool and the cache, requests through
	// the controller.
	for i := range 12 {
		w.wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for ctx.Err() == nil {
				s := db
				if i%3 == 0 {
					s = cache
				}
				label := semaphore.ContextWithHolderLabel(ctx, fmt.Sprintf("worker-%d", i))
				u, err := s.AcquireUnits(label, 1+rng.Int64N(2))
				if err != nil {
					return
				}
				pause(ctx, time.Duration(5+rng.IntN(40))*time.Millisecond) // the work
				u.Release()
				w.ctrl.Do(ctx, "scan", 1<<20, func(ctx context.Context, _ *admission.Permit) error {
					pause(ctx, time.Duration(rng.IntN(10))*time.Millisecond)
					return nil
				})
			}
		})
	}
	return w
}

// stop ends the workload: the waiters fail on the broken semaphores and every
// goroutine returns.
func (w *workload) stop() {
	w.cancel()
	for _, s := range w.sems {
		s.Break(errors.New("example shutting down"))
	}
	w.ctrl.Break(errors.New("example shutting down"))
	w.api.Break(errors.New("example shutting down"))
	w.wg.Wait()
	for _, c := range w.cleanups {
		c()
	}
}

// pause waits for d or until ctx ends: the stand-in for real work.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
