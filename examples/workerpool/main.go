// Command workerpool runs a batch of jobs with at most three at a time, using
// WithSemaphore so that every job releases its unit on every path, including errors.
// Jobs are started in order and, because the semaphore is FIFO, admitted in order.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
)

const workers = 3

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workerpool:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	ctx := context.Background()
	slots := semaphore.New(workers, semaphore.WithName("workers"))
	var running, peak atomic.Int64
	results := make([]string, 12)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			err := semaphore.WithSemaphore(ctx, slots, 1, func(ctx context.Context) error {
				now := running.Add(1)
				defer running.Add(-1)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				return job(ctx, i)
			})
			if err != nil {
				results[i] = fmt.Sprintf("job %2d: failed: %v", i, err)
			} else {
				results[i] = fmt.Sprintf("job %2d: done", i)
			}
		})
	}
	wg.Wait()
	for _, r := range results {
		fmt.Fprintln(out, r)
	}
	st := slots.Stats()
	fmt.Fprintf(out, "peak concurrency %d (limit %d); %d jobs, %d waited for a slot; %d units free at the end\n",
		peak.Load(), workers, st.Acquired, st.Queued, slots.Available())
	if peak.Load() > workers || slots.Available() != workers {
		return fmt.Errorf("peak %d with limit %d, %d units free at the end", peak.Load(), workers, slots.Available())
	}
	return nil
}

// job pretends to work; every fifth one fails, and its slot is released all the same.
func job(ctx context.Context, i int) error {
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	if i%5 == 4 {
		return errors.New("bad input")
	}
	return nil
}
