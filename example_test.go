package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/fairsem/semaphore"
)

// A semaphore of capacity 2 admits two holders; a third caller waits or gives up.
func ExampleNew() {
	sem := semaphore.New(2, semaphore.WithName("db-conns"))
	ctx := context.Background()

	if err := sem.Acquire(ctx, 2); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sem)

	// Nothing is free: a caller with a deadline gives up with an error that says why.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	err := sem.Acquire(ctx, 1)
	fmt.Println(errors.Is(err, context.DeadlineExceeded), errors.Is(err, semaphore.ErrTimedOut))

	sem.Release(2)
	fmt.Println(sem)
	// Output:
	// semaphore "db-conns" (0 of 2 units available, 0 waiting)
	// true true
	// semaphore "db-conns" (2 of 2 units available, 0 waiting)
}

// TryAcquire never waits and never jumps the queue.
func ExampleSemaphore_TryAcquire() {
	sem := semaphore.New(1)
	if sem.TryAcquire(1) {
		fmt.Println("got it")
		defer sem.Release(1)
	}
	fmt.Println("again:", sem.TryAcquire(1))
	// Output:
	// got it
	// again: false
}

// Units return themselves with a deferred Release, which is safe even when the
// acquire failed and idempotent when units were released earlier.
func ExampleSemaphore_AcquireUnits() {
	sem := semaphore.New(4)
	u, err := sem.AcquireUnits(context.Background(), 3)
	defer u.Release()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding", u.Count(), "of", sem.Capacity())
	// Output: holding 3 of 4
}

// Split hands part of a reservation to another owner; Return gives part back early.
func ExampleUnits_Split() {
	mem := semaphore.New(1000, semaphore.WithName("memory"))
	u, _ := mem.TryAcquireUnits(600)

	part, _ := u.Split(200) // for a sub-task with its own lifetime
	fmt.Println(u.Count(), part.Count(), mem.Available())

	_ = u.Return(100) // no longer needed
	part.Release()
	fmt.Println(u.Count(), mem.Available())

	_, err := u.Split(500)
	fmt.Println(err)
	u.Release()
	// Output:
	// 400 200 400
	// 300 700
	// semaphore "memory": Split 500 units: the units hold only 300
}

// WithSemaphore holds the units exactly while fn runs.
func ExampleWithSemaphore() {
	sem := semaphore.New(1)
	err := semaphore.WithSemaphore(context.Background(), sem, 1, func(ctx context.Context) error {
		fmt.Println("inside: available", sem.Available())
		return nil
	})
	fmt.Println("after: available", sem.Available(), "err", err)

	n, err := semaphore.WithSemaphoreValue(context.Background(), sem, 1, func(context.Context) (int, error) {
		return 42, nil
	})
	fmt.Println(n, err)
	// Output:
	// inside: available 0
	// after: available 1 err <nil>
	// 42 <nil>
}

// Break fails every waiter and every later call: the way to shut down whatever
// waits on a resource that is going away.
func ExampleSemaphore_Break() {
	sem := semaphore.New(1, semaphore.WithName("workers"))
	_ = sem.Acquire(context.Background(), 1)

	done := make(chan error)
	go func() { done <- sem.Acquire(context.Background(), 1) }()
	for sem.Waiters() == 0 {
		runtime.Gosched() // wait until the goroutine has queued
	}

	sem.Break(errors.New("shutting down"))
	err := <-done
	fmt.Println(err)
	fmt.Println(errors.Is(err, semaphore.ErrBroken))
	sem.Release(1) // a no-op now: holders need not know about the break
	// Output:
	// semaphore "workers": acquire 1 unit: broken: shutting down
	// true
}
