package group_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/group"
)

// Process files under a budget of 10 "megabytes" in flight: each task takes its
// file's size in units, and starts only once they are granted.
func ExampleGroup() {
	sizes := map[string]int64{"a": 4, "b": 7, "c": 3, "d": 10}
	sem := semaphore.New(10)
	g, ctx := group.WithContext(context.Background(), sem)
	var mu sync.Mutex
	var total int64
	for _, name := range []string{"a", "b", "c", "d"} {
		err := g.Go(ctx, sizes[name], func() error {
			mu.Lock()
			total += sizes[name]
			mu.Unlock()
			return nil
		})
		if err != nil {
			break
		}
	}
	if err := g.Wait(); err != nil {
		fmt.Println(err)
	}
	fmt.Println("processed", total, "MB; budget back:", sem.Available())
	// Output: processed 24 MB; budget back: 10
}

// The first error cancels the group's context; Go calls waiting with that
// context give up, and Wait returns the error.
func ExampleWithContext() {
	g, ctx := group.WithContext(context.Background(), semaphore.New(1))
	_ = g.Go(ctx, 1, func() error { return errors.New("disk full") })
	err := g.Go(ctx, 1, func() error { return nil }) // waits for the unit, or for the cancel
	fmt.Println(err == nil || errors.Is(err, context.Canceled))
	fmt.Println(g.Wait())
	// Output:
	// true
	// disk full
}

// A panic in a task is re-raised by Wait with the task's stack.
func ExampleGroup_Wait_panic() {
	g := group.New(semaphore.New(2))
	_ = g.Go(context.Background(), 1, func() error { panic("bug") })
	defer func() {
		p := recover().(*group.PanicError)
		fmt.Println("recovered:", p.Value)
	}()
	_ = g.Wait()
	// Output: recovered: bug
}
