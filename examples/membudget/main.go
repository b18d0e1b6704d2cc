// Command membudget budgets bytes of memory with a weighted semaphore: each request
// reserves an estimate of what it will need before it starts, accounts with Consume
// for memory it has already allocated beyond the estimate, and gives back what it
// did not use with Split as soon as it knows, instead of holding it to the end.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/fairsem/semaphore"
)

const budget = 1 << 20 // 1 MiB

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "membudget:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	ctx := context.Background()
	mem := semaphore.New(budget, semaphore.WithName("memory"))

	// A large request cannot be admitted: it is refused at once, not queued forever.
	if err := mem.Acquire(ctx, 2*budget); err != nil {
		fmt.Fprintln(out, "refused:", err)
	}

	// Requests reserve their estimate; the FIFO wait list keeps a large one from
	// being starved by small ones.
	sizes := []int64{256 << 10, 512 << 10, 128 << 10, 768 << 10, 64 << 10}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, estimate := range sizes {
		wg.Go(func() {
			u, err := mem.AcquireUnits(ctx, estimate)
			if err != nil {
				fmt.Fprintln(out, "request", i, "failed:", err)
				return
			}
			defer u.Release()

			// Parsing showed half of the estimate is enough: hand the rest back now.
			spare, _ := u.Split(estimate / 2)
			spare.Release()

			// A buffer was grown beyond the reservation; account for it after the
			// fact. Consume never blocks, so availability may briefly go negative.
			extra := mem.ConsumeUnits(16 << 10)
			_ = u.Adopt(extra) // same semaphore: cannot fail
			mu.Lock()
			fmt.Fprintf(out, "request %d: reserved %4d KiB, kept %4d KiB\n", i, estimate>>10, u.Count()>>10)
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Fprintf(out, "all requests done: %d of %d bytes available\n", mem.Available(), mem.Capacity())
	if mem.Available() != budget {
		return fmt.Errorf("%d of %d bytes came back", mem.Available(), budget)
	}
	return nil
}
