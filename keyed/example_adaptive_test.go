package keyed_test

import (
	"context"
	"fmt"

	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/keyed"
)

// An adaptive limiter drives the set's limit over all keys (WithLimit) with
// Resize; the set admits each call, and the limiter measures it.
func ExampleSet_Resize_adaptive() {
	set := keyed.New(4, keyed.WithLimit(8), keyed.WithName("tenants"))
	l := adaptive.New(set, adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 8, MinLimit: 1}), adaptive.WithWindow(1, 0, 0))
	u, err := set.Acquire(context.Background(), "acme", 1)
	if err != nil {
		return
	}
	c := l.Start(1, 0) // admitted at once
	c.Done(adaptive.Dropped)
	u.Release()
	fmt.Println("limit over all keys:", set.Stats().Limit)
	// Output: limit over all keys: 7
}
