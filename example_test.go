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
	sem.Release(1) // never panics, and counts for Drain: holders need not know about the break
	// Output:
	// semaphore "workers": acquire 1 unit: broken: "shutting down"
	// true
}

// AcquireTimeout waits without a context. A zero timeout is a try that says why it
// failed.
func ExampleSemaphore_AcquireTimeout() {
	sem := semaphore.New(1, semaphore.WithName("printer"))
	if err := sem.AcquireTimeout(time.Second, 1); err == nil {
		fmt.Println("got the printer")
	}
	err := sem.AcquireTimeout(0, 1)
	fmt.Println(errors.Is(err, semaphore.ErrTimedOut), errors.Is(err, context.DeadlineExceeded))
	fmt.Println(err)
	sem.Release(1)
	// Output:
	// got the printer
	// true true
	// semaphore "printer": acquire 1 unit: not available at once and the timeout is 0s (0 of 1 unit available)
}

// Resize changes the limit while the semaphore is in use: holders keep their units,
// and a waiter that can no longer fit fails with ErrTooLarge.
func ExampleSemaphore_Resize() {
	sem := semaphore.New(4, semaphore.WithName("workers"))
	_ = sem.Acquire(context.Background(), 3)

	done := make(chan error)
	go func() { done <- sem.Acquire(context.Background(), 4) }()
	for sem.Waiters() == 0 {
		runtime.Gosched() // wait until the goroutine has queued
	}

	sem.Resize(2) // shrink below what is held
	fmt.Println(<-done)
	fmt.Println(sem)
	sem.Release(3)
	fmt.Println(sem)
	// Output:
	// semaphore "workers": acquire 4 units: more than the capacity, which was reduced while waiting
	// semaphore "workers" (0 of 2 units available, 0 waiting)
	// semaphore "workers" (2 of 2 units available, 0 waiting)
}

// Stats counts what callers saw: grants with and without waiting, and each kind of
// failure under the error it returned.
func ExampleSemaphore_Stats() {
	sem := semaphore.New(2, semaphore.WithName("db-conns"), semaphore.WithMaxWaiters(0))
	_ = sem.Acquire(context.Background(), 2)
	_ = sem.Acquire(context.Background(), 1) // queue full
	_ = sem.Acquire(context.Background(), 3) // too large
	_ = sem.AcquireTimeout(0, 1)             // timed out
	sem.Release(2)

	st := sem.Stats()
	fmt.Printf("%s: acquired %d (%d at once), queued %d, timed out %d, rejected %d, %d of %d available\n",
		st.Name, st.Acquired, st.AcquiredImmediately, st.Queued, st.TimedOut, st.Rejected, st.Available, st.Capacity)
	// Output:
	// db-conns: acquired 1 (1 at once), queued 0, timed out 1, rejected 2, 2 of 2 available
}

// Consume accounts for a resource already spent, such as memory allocated before
// asking: availability may go below zero, and new requests wait until it is back.
func ExampleSemaphore_Consume() {
	mem := semaphore.New(100, semaphore.WithName("memory"))
	mem.Consume(130) // a buffer grew past the budget
	fmt.Println(mem.Available(), mem.TryAcquire(1))
	mem.Release(130)
	fmt.Println(mem.Available())
	// Output:
	// 0 false
	// 100
}

// WithMaxWaiters sheds load: when the queue is full a new call fails at once instead
// of waiting longer than it is worth.
func ExampleWithMaxWaiters() {
	sem := semaphore.New(1, semaphore.WithName("api"), semaphore.WithMaxWaiters(1))
	_ = sem.Acquire(context.Background(), 1)

	waiting := make(chan error)
	go func() { waiting <- sem.Acquire(context.Background(), 1) }()
	for sem.Waiters() == 0 {
		runtime.Gosched()
	}

	err := sem.Acquire(context.Background(), 1)
	fmt.Println(errors.Is(err, semaphore.ErrQueueFull))
	fmt.Println(err)
	sem.Release(1)
	fmt.Println(<-waiting)
	sem.Release(1)
	// Output:
	// true
	// semaphore "api": acquire 1 unit: wait queue full (1 waiter)
	// <nil>
}

// Break, then Drain: stop admitting, then wait for the holders to finish.
func ExampleSemaphore_Drain() {
	sem := semaphore.New(3, semaphore.WithName("jobs"))
	finish := make(chan struct{})
	for range 3 {
		u, _ := sem.TryAcquireUnits(1)
		go func() {
			defer u.Release()
			<-finish // a job running
		}()
	}

	sem.Break(errors.New("shutting down"))
	fmt.Println(sem.Acquire(context.Background(), 1))

	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	fmt.Println(sem.Drain(ctx)) // the jobs still run
	cancel()

	close(finish)
	fmt.Println(sem.Drain(context.Background()))
	// Output:
	// semaphore "jobs": acquire 1 unit: broken: "shutting down"
	// semaphore "jobs": drain: 3 units still out: context deadline exceeded
	// <nil>
}
