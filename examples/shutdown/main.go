// Command shutdown shows Break used for a clean shutdown: requests waiting for a
// connection slot fail at once with an error that says why, instead of hanging until
// their own timeouts, and holders return their units without having to know.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

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

	// Two requests hold the connections.
	holders := make([]*semaphore.Units, 2)
	for i := range holders {
		holders[i], _ = conns.TryAcquireUnits(1)
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

	// The holders finish and release; on a broken semaphore that is a no-op.
	for _, u := range holders {
		u.Release()
	}
	// Newcomers fail at once.
	fmt.Fprintln(out, "newcomer:", conns.Acquire(ctx, 1))
	fmt.Fprintln(out, "after shutdown:", conns)
	if failed != 5 {
		return fmt.Errorf("%d of 5 waiters failed with the break error", failed)
	}
	return nil
}
