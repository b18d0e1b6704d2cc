package semaphore_test

import (
	"context"
	"expvar"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/fairsem/semaphore"
)

// waitLog is an Observer that prints how each wait ended.
type waitLog struct{}

func (waitLog) WaitEnded(s *semaphore.Semaphore, e semaphore.WaitEvent) {
	fmt.Printf("%s: %d units, %s, queued=%t\n", s.Name(), e.Units, e.Outcome, e.Queued)
}

func (waitLog) Broken(s *semaphore.Semaphore, cause error) {
	fmt.Printf("%s: broken: %v\n", s.Name(), cause)
}

// An Observer hears about every call that could not be granted at once: the place
// to feed a wait-time histogram (see the metrics/prom and metrics/otel modules).
func ExampleWithObserver() {
	sem := semaphore.New(2, semaphore.WithName("db"), semaphore.WithObserver(waitLog{}))

	_ = sem.Acquire(context.Background(), 2) // granted at once: not reported
	_ = sem.AcquireTimeout(time.Millisecond, 1)
	_ = sem.Acquire(context.Background(), 3)
	sem.Break(fmt.Errorf("shutting down"))
	// Output:
	// db: 1 units, timed_out, queued=true
	// db: 3 units, too_large, queued=false
	// db: broken: shutting down
}

// A Semaphore logs as a group of its state.
func ExampleSemaphore_LogValue() {
	sem := semaphore.New(10, semaphore.WithName("db"))
	_ = sem.Acquire(context.Background(), 3)
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // keep the output stable
			}
			return a
		},
	}))
	logger.Info("slow query", "sem", sem)
	// Output:
	// level=INFO msg="slow query" sem.name=db sem.capacity=10 sem.available=7 sem.waiters=0 sem.broken=false
}

// Stats publish with expvar in one line, and then appear under /debug/vars.
func ExampleSemaphore_Stats_expvar() {
	sem := semaphore.New(10, semaphore.WithName("db"))
	expvar.Publish("db-semaphore", expvar.Func(func() any { return sem.Stats() }))

	fmt.Println(strings.Contains(expvar.Get("db-semaphore").String(), `"Capacity":10`))
	// Output: true
}

// With holder tracking, Diagnostics names who holds the units a waiter needs.
func ExampleSemaphore_Diagnostics() {
	sem := semaphore.New(4, semaphore.WithName("db"), semaphore.WithHolderTracking())
	ctx := semaphore.ContextWithHolderLabel(context.Background(), "report-job")
	u, _ := sem.AcquireUnits(ctx, 3)
	defer u.Release()

	go func() { _ = sem.AcquireTimeout(time.Second, 4) }()
	for sem.Waiters() == 0 {
		runtime.Gosched()
	}
	fmt.Print(sem.Diagnostics(10))
	// The dump reads like:
	//
	//	semaphore "db": head waiter wants 4 units (waiting 15µs), 1 available, 3 held by 1 holder for 60µs (oldest: report-job (main.go:21))
	//	capacity 4, available 1, held 3, waiters 1 (4 units)
	//	holders (1, 3 units), by site, oldest first:
	//	  holders  units  oldest    site
	//	  1        3      60µs      report-job (main.go:21)
	//	waiters, head first:
	//	  position  units  waiting
	//	  1         4      15µs
}

// Leak detection reports a Units dropped without Release, with where it was
// acquired; Reclaim gives the units back.
func ExampleWithLeakDetection() {
	leaks := make(chan semaphore.LeakReport, 1)
	sem := semaphore.New(4, semaphore.WithName("db"),
		semaphore.WithLeakDetection(func(r semaphore.LeakReport) { leaks <- r }))

	forget(sem) // acquires 2 units and never releases them

	for {
		runtime.GC() // the report comes once the collector finds the Units
		select {
		case r := <-leaks:
			fmt.Println(r.Units, "units leaked by", r.Label)
			r.Reclaim()
			fmt.Println(sem.Available(), "available after Reclaim")
			return
		case <-time.After(time.Millisecond):
		}
	}
	// Output:
	// 2 units leaked by nightly-report
	// 4 available after Reclaim
}

//go:noinline
func forget(sem *semaphore.Semaphore) {
	u, _ := sem.AcquireUnits(semaphore.ContextWithHolderLabel(context.Background(), "nightly-report"), 2)
	_ = u // no Release
}

// The watchdog logs the dump when the head of the queue has waited too long.
func ExampleWithWatchdog() {
	sem := semaphore.New(1, semaphore.WithName("db"),
		semaphore.WithWatchdog(5*time.Second, time.Minute, slog.Default()))
	_ = sem
}
