package semaphore_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/fairsem/semaphore/xsync/semaphore"
)

// Bounding the number of goroutines working at once, exactly as with
// golang.org/x/sync/semaphore: only the import path differs.
func ExampleWeighted() {
	ctx := context.Background()
	sem := semaphore.NewWeighted(2)
	results := make([]int, 5)
	var wg sync.WaitGroup
	for i := range results {
		if err := sem.Acquire(ctx, 1); err != nil {
			break
		}
		wg.Go(func() {
			defer sem.Release(1)
			results[i] = i * i
		})
	}
	wg.Wait()
	fmt.Println(results)
	// Output: [0 1 4 9 16]
}

// Acquire returns ctx.Err() itself, so code that compares errors with == keeps
// working after the migration.
func ExampleWeighted_Acquire_canceled() {
	sem := semaphore.NewWeighted(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := sem.Acquire(ctx, 1)
	fmt.Println(err == context.Canceled)
	// Output: true
}

func ExampleWeighted_TryAcquire() {
	sem := semaphore.NewWeighted(3)
	fmt.Println(sem.TryAcquire(2), sem.TryAcquire(2), sem.TryAcquire(1))
	sem.Release(3)
	// Output: true false true
}
