package adaptive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// A limiter in front of a backend: Do measures each call and moves the
// semaphore's capacity.
func ExampleLimiter_Do() {
	sem := semaphore.New(1, semaphore.WithName("db"))
	l := adaptive.New(sem, adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 4, MinLimit: 1, MaxLimit: 16}),
		adaptive.WithWindow(1, 0, 0))
	for range 3 { // served, with 1 of 4 in flight: the limit is not used, it stays
		_ = l.Do(context.Background(), func(context.Context) error { return nil })
	}
	fmt.Println("limit:", l.Limit(), "capacity:", sem.Capacity())
	c, _ := l.Acquire(context.Background())
	c.Done(adaptive.Dropped) // an overload signal: x0.9
	fmt.Println("after a drop:", l.Limit(), "capacity:", sem.Capacity())
	// Output:
	// limit: 4 capacity: 4
	// after a drop: 3 capacity: 3
}

// Acquire and Done, for a call whose verdict is known elsewhere (here, a
// response status).
func ExampleLimiter_Acquire() {
	l := adaptive.New(semaphore.New(1), adaptive.NewGradient2(adaptive.Gradient2Config{MinLimit: 2}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := l.Acquire(ctx)
	if err != nil {
		return // refused: the semaphore's error
	}
	defer c.Release() // safe after Done
	status := 503
	if status == 503 {
		c.Done(adaptive.Dropped)
	} else {
		c.Done(adaptive.Success)
	}
	fmt.Println(l.Stats().Dropped)
	// Output: 1
}

// The default algorithm, Capacity, starts from the semaphore's capacity; an
// algorithm given to New starts from its own initial limit.
func ExampleNew() {
	sem := semaphore.New(8, semaphore.WithName("db"))
	l := adaptive.New(sem, nil)
	fmt.Println("limit:", l.Limit(), "capacity:", sem.Capacity())
	l = adaptive.New(sem, adaptive.NewVegas(adaptive.VegasConfig{}))
	fmt.Println("limit:", l.Limit(), "capacity:", sem.Capacity())
	// Output:
	// limit: 8 capacity: 8
	// limit: 20 capacity: 20
}

// A Limiter drives anything with a settable limit; calls admitted there are
// measured with Start.
func ExampleResizeFunc() {
	setLimit := func(n int64) { fmt.Println("limit set to", n) } // a controller's setter
	l := adaptive.New(adaptive.ResizeFunc(setLimit), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 4, MinLimit: 1}),
		adaptive.WithWindow(1, 0, 0))
	c := l.Start(1, 0) // admitted by the controller, which did not make it wait
	c.Done(adaptive.Dropped)
	// Output:
	// limit set to 4
	// limit set to 3
}
