// Command stall shows a stall behind a semaphore being diagnosed: a worker forgets
// to release its units, a request waits, the watchdog logs a dump that names the
// forgetful worker, leak detection reports the dropped Units once the garbage
// collector finds it, and the program scrapes its own Prometheus endpoint on
// 127.0.0.1 to show the wait in the metrics. It exits by itself.
//
//	go run ./examples/stall   (from metrics/prom)
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/metrics/prom"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "stall:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	// The watchdog's dumps go to out, and dumped is told when one was logged.
	dumped := make(chan struct{}, 1)
	logger := slog.New(notify{slog.NewTextHandler(out, &slog.HandlerOptions{ReplaceAttr: dropTime}), dumped})
	leaks := make(chan semaphore.LeakReport, 1)

	metrics := prom.NewSemaphoreCollector()
	sem := semaphore.New(2, semaphore.WithName("db-conns"),
		semaphore.WithObserver(metrics),
		semaphore.WithWatchdog(200*time.Millisecond, time.Minute, logger),
		semaphore.WithLeakDetection(func(r semaphore.LeakReport) { leaks <- r }))
	metrics.Add(sem)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		_ = srv.Shutdown(context.Background())
		<-served
	}()

	// Two workers take a connection each. The report job forgets to release it.
	forgetfulWorker(sem)
	importer, err := sem.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), "importer"), 1)
	if err != nil {
		return err
	}

	// A request that needs both connections waits; the watchdog notices.
	fmt.Fprintln(out, "== a request for 2 units waits; after 200ms the watchdog logs:")
	granted := make(chan error, 1)
	go func() {
		granted <- semaphore.WithSemaphore(context.Background(), sem, 2, func(context.Context) error { return nil })
	}()
	select {
	case <-dumped:
	case <-time.After(time.Minute):
		return errors.New("the watchdog did not log a dump")
	}
	fmt.Fprintln(out, "== the same dump, as Diagnostics returns it:")
	fmt.Fprint(out, sem.Diagnostics(10))

	// The forgetful worker's Units is garbage by now: leak detection reports it.
	fmt.Fprintln(out, "== leak detection, after a garbage collection:")
	report, err := awaitLeak(leaks)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, report)
	report.Reclaim() // give the leaked unit back, as the forgotten Release would have
	importer.Release()
	if err := <-granted; err != nil {
		return err
	}
	fmt.Fprintln(out, "== the request got its units; the metrics, scraped from", ln.Addr())
	return scrape(out, "http://"+ln.Addr().String()+"/metrics")
}

// forgetfulWorker runs a job that acquires a unit and never releases it.
func forgetfulWorker(sem *semaphore.Semaphore) {
	u, err := sem.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), "nightly-report"), 1)
	if err != nil {
		panic(err)
	}
	_ = u // the bug: no defer u.Release()
}

func awaitLeak(leaks <-chan semaphore.LeakReport) (semaphore.LeakReport, error) {
	deadline := time.After(time.Minute)
	for {
		runtime.GC()
		select {
		case r := <-leaks:
			return r, nil
		case <-deadline:
			return semaphore.LeakReport{}, errors.New("no leak report")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// scrape prints the semaphore's metrics from the endpoint, skipping comments and
// empty buckets.
func scrape(out io.Writer, url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "semaphore_") && !strings.HasSuffix(line, " 0") {
			fmt.Fprintln(out, line)
		}
	}
	return lines.Err()
}

// notify is a slog.Handler that signals each record after handling it.
type notify struct {
	slog.Handler
	logged chan<- struct{}
}

func (n notify) Handle(ctx context.Context, r slog.Record) error {
	err := n.Handler.Handle(ctx, r)
	select {
	case n.logged <- struct{}{}:
	default:
	}
	return err
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
