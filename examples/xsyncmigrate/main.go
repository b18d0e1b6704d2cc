// Command xsyncmigrate is code written for golang.org/x/sync/semaphore that was
// migrated by changing its import path only: it still calls
// semaphore.NewWeighted, Acquire, TryAcquire and Release, and still compares
// Acquire's error with ==, and now runs on the FIFO core of this module.
//
// It bounds a batch of jobs to a few at a time, takes an exclusive "write lock"
// with a full-size Acquire while readers hold shared units, and shows a
// canceled wait returning exactly context.Canceled. It prints what it saw and
// exits.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore/xsync/semaphore" // was "golang.org/x/sync/semaphore"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "xsyncmigrate:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	ctx := context.Background()

	// 1. Bounded parallelism, the most common x/sync pattern.
	const limit, jobs = 3, 20
	sem := semaphore.NewWeighted(limit)
	var active, peak atomic.Int64
	var wg sync.WaitGroup
	for range jobs {
		if err := sem.Acquire(ctx, 1); err != nil {
			return err
		}
		wg.Go(func() {
			defer sem.Release(1)
			now := active.Add(1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			time.Sleep(time.Millisecond) // the job's work
			active.Add(-1)
		})
	}
	// Acquiring the whole size waits for every job, another x/sync idiom.
	if err := sem.Acquire(ctx, limit); err != nil {
		return err
	}
	sem.Release(limit)
	wg.Wait()
	fmt.Fprintf(out, "ran %d jobs, at most %d at once (limit %d)\n", jobs, peak.Load(), limit)

	// 2. A reader/writer lock: readers take 1, the writer takes the whole size,
	// and a waiting writer is not starved by readers arriving after it.
	const readers = 4
	rw := semaphore.NewWeighted(readers)
	for range readers {
		if !rw.TryAcquire(1) {
			return fmt.Errorf("reader refused")
		}
	}
	writerIn := make(chan error, 1)
	go func() { writerIn <- rw.Acquire(ctx, readers) }()
	// Wait until the writer is queued: from then on, TryAcquire refuses even when
	// a unit is free, because it never jumps the queue.
	rw.Release(1)
	for rw.TryAcquire(1) {
		rw.Release(1)
	}
	fmt.Fprintln(out, "a late reader is refused while the writer waits:", !rw.TryAcquire(1))
	for range readers - 1 {
		rw.Release(1)
	}
	if err := <-writerIn; err != nil {
		return err
	}
	fmt.Fprintln(out, "the writer got the lock once the readers left")
	rw.Release(readers)

	// 3. Errors are ctx.Err() itself, so == comparisons keep working.
	one := semaphore.NewWeighted(1)
	if err := one.Acquire(ctx, 1); err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- one.Acquire(cctx, 1) }()
	cancel()
	err := <-waited
	fmt.Fprintln(out, "canceled wait: err == context.Canceled:", err == context.Canceled) //nolint:errorlint // the point
	one.Release(1)
	return nil
}
