package keyed_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

// At most 2 concurrent uploads per user, at most 3 in all.
func Example() {
	global := semaphore.New(3, semaphore.WithName("all uploads"))
	uploads := keyed.New(2, keyed.WithName("uploads"), keyed.WithGlobal(global))
	ctx := context.Background()

	a1, _ := uploads.Acquire(ctx, "alice", 1)
	a2, _ := uploads.Acquire(ctx, "alice", 1)
	_, err := uploads.AcquireTimeout(0, "alice", 1)
	fmt.Println(err)

	b1, _ := uploads.Acquire(ctx, "bob", 1)
	_, err = uploads.AcquireTimeout(0, "bob", 1)
	fmt.Println(err)
	fmt.Println(errors.Is(err, semaphore.ErrTimedOut))

	for _, u := range []*keyed.Units{a1, a2, b1} {
		u.Release()
	}
	fmt.Println(uploads)
	// Output:
	// keyed "uploads": acquire 1 unit for key "alice": not available at once and the timeout is 0s (0 of 2 units available)
	// keyed "uploads": acquire 1 unit for key "bob": global semaphore "all uploads": not available at once and the timeout is 0s (0 of 3 units available)
	// true
	// keyed "uploads" (0 keys active)
}

// Per-key overrides: paying customers get more, blocked ones nothing.
func ExampleWithCapacityFunc() {
	plans := map[string]int64{"acme": 8, "spammer": 0}
	s := keyed.New(2, keyed.WithCapacityFunc(func(key string) int64 {
		if c, ok := plans[key]; ok {
			return c
		}
		return 2
	}))
	for _, key := range []string{"acme", "someone", "spammer"} {
		fmt.Println(key, s.KeyStats(key).Capacity)
	}
	_, err := s.AcquireTimeout(time.Second, "spammer", 1)
	fmt.Println(errors.Is(err, semaphore.ErrTooLarge))
	// Output:
	// acme 8
	// someone 2
	// spammer 0
	// true
}

// Shutdown: stop admitting, then wait for the holders.
func ExampleSet_Break() {
	s := keyed.New(4, keyed.WithName("jobs"))
	u, _ := s.Acquire(context.Background(), "tenant-1", 1)

	s.Break(errors.New("shutting down"))
	_, err := s.Acquire(context.Background(), "tenant-2", 1)
	fmt.Println(err)

	go u.Release() // a holder finishing its work
	fmt.Println(s.Drain(context.Background()))
	// Output:
	// keyed "jobs": acquire 1 unit for key "tenant-2": broken: "shutting down"
	// <nil>
}

// A limit shared fairly among tenants, with no limit per tenant: a tenant
// alone may use all of it, and tenants that all want more share it by weight.
func ExampleNoKeyLimit() {
	weights := map[string]int64{"gold": 3}
	s := keyed.New(keyed.NoKeyLimit, keyed.WithName("queries"), keyed.WithLimit(8),
		keyed.WithWeightFunc(func(tenant string) int64 { return max(weights[tenant], 1) }))

	free, _ := s.TryAcquire("free", 8) // alone, a tenant takes the whole limit
	fmt.Println("free holds", s.KeyStats("free").Held, "of", s.Stats().Limit)

	gold, _ := s.TryAcquire("gold", 0) // gold becomes active, and would wait for more
	for _, tenant := range []string{"gold", "free"} {
		ks := s.KeyStats(tenant)
		fmt.Printf("%s: weight %d, share %d, borrowed %d\n", tenant, ks.Weight, ks.Share, ks.Borrowed)
	}
	gold.Release()
	free.Release()
	// Output:
	// free holds 8 of 8
	// gold: weight 3, share 6, borrowed 0
	// free: weight 1, share 2, borrowed 6
}

// AcquireInto fills a Units the caller keeps, here on the stack, so that a
// call allocates nothing; the Units can be filled again once released.
func ExampleSet_AcquireInto() {
	s := keyed.New(2, keyed.WithName("uploads"))
	ctx := context.Background()
	var u keyed.Units
	for _, user := range []string{"alice", "bob"} {
		if err := s.AcquireInto(ctx, &u, user, 1); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(u.Key(), u.Count())
		u.Release()
	}
	fmt.Println(s)
	// Output:
	// alice 1
	// bob 1
	// keyed "uploads" (0 keys active)
}
