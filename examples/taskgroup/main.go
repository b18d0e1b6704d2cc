// Command taskgroup uploads a batch of files of different sizes under a memory
// budget with a weighted task group: each upload takes its size in units of the
// budget and its goroutine starts only once they are granted, in FIFO order. One
// upload fails, which cancels the group's context: the uploads still waiting
// give up, and Wait returns the failure.
//
// It prints the peak memory in flight against the budget, the peak number of
// task goroutines, and how the batch ended, then exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/group"
)

const budget = 64 // MB in flight at most

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "taskgroup:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	files := make([]int64, 200)
	for i := range files {
		files[i] = int64(1 + (i*37)%32) // 1..32 MB
	}

	// First a batch that succeeds.
	peakMB, peakTasks, err := upload(files, -1)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "uploaded %d files: at most %d MB in flight (budget %d), at most %d tasks at once\n",
		len(files), peakMB, budget, peakTasks)
	if peakMB > budget {
		return fmt.Errorf("the budget was exceeded: %d MB", peakMB)
	}

	// Then one in which file 50 fails.
	_, _, err = upload(files, 50)
	fmt.Fprintln(out, "second batch:", err)
	if !errors.Is(err, errUpload) {
		return fmt.Errorf("expected the upload failure, got %v", err)
	}
	return nil
}

var errUpload = errors.New("upload failed: connection reset")

// upload sends every file through a group on a budget of its own; the file at
// index failAt (if any) fails.
func upload(files []int64, failAt int) (peakMB, peakTasks int64, err error) {
	mem := semaphore.New(budget, semaphore.WithName("upload-memory"))
	g, ctx := group.WithContext(context.Background(), mem)
	var inFlight, tasks atomic.Int64
	for i, size := range files {
		goErr := g.Go(ctx, size, func() error {
			raise(&peakTasks, tasks.Add(1))
			raise(&peakMB, inFlight.Add(size))
			defer tasks.Add(-1)
			defer inFlight.Add(-size)
			if i == failAt {
				return fmt.Errorf("file %d: %w", i, errUpload)
			}
			select {
			case <-time.After(time.Duration(size) * 50 * time.Microsecond): // the transfer
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if goErr != nil {
			break // the group's context ended: stop submitting
		}
	}
	return peakMB, peakTasks, g.Wait()
}

func raise(peak *int64, now int64) {
	for {
		old := atomic.LoadInt64(peak)
		if now <= old || atomic.CompareAndSwapInt64(peak, old, now) {
			return
		}
	}
}
