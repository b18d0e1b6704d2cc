// Command shutdown shows the shutdown sequence of a service that bounds its
// connections with a Semaphore: Break stops admitting (requests waiting for a
// connection fail at once with an error that says why, instead of hanging until
// their own timeouts), then Drain waits for the requests still running to give
// their connections back, which they do without having to know about the break.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/fairsem/semaphore"
)

var errShuttingDown = errors.New("server shutting down")

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shutdown:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	conns := semaphore.New(2, semaphore.WithName("db-conns"))
	ctx := context.Background()

	// Two requests hold the connections and are still running.
	finish := make(chan struct{})
	var running sync.WaitGroup
	for range 2 {
		u, _ := conns.TryAcquireUnits(1)
		running.Go(func() {
			defer u.Release() // a no-op for Available after the break, but counted by Drain
			<-finish
		})
	}

	// Five more wait for one.
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			u, err := conns.AcquireUnits(ctx, 1)
			defer u.Release() // safe even when err != nil: u is nil
			errs <- err
		})
	}
	for conns.Waiters() < 5 {
		runtime.Gosched() // let them queue; a real server would shut down at any moment
	}
	fmt.Fprintln(out, "before shutdown:", conns)

	// Step 1: stop admitting.
	conns.Break(errShuttingDown)
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if errors.Is(err, semaphore.ErrBroken) && errors.Is(err, errShuttingDown) {
			failed++
			fmt.Fprintln(out, "waiter:", err)
		}
	}
	fmt.Fprintln(out, "newcomer:", conns.Acquire(ctx, 1))

	// Step 2: wait for the running requests, with a grace period. Here the first
	// wait gives up at once, to show what Drain says while requests still run.
	impatient, cancel := context.WithTimeout(ctx, 0)
	fmt.Fprintln(out, "drain, no grace period:", conns.Drain(impatient))
	cancel()

	close(finish) // the running requests finish and release
	grace, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := conns.Drain(grace); err != nil {
		return err
	}
	running.Wait()
	fmt.Fprintln(out, "drained:", conns)
	if failed != 5 {
		return fmt.Errorf("%d of 5 waiters failed with the break error", failed)
	}
	return nil
}
