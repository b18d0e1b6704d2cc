package semaphore_test

import (
	"context"
	"math"
	"testing"
	"time"

	xsem "golang.org/x/sync/semaphore"

	"github.com/fairsem/semaphore/xsync/semaphore"
)

// The drop-in (impl=dropin) and golang.org/x/sync/semaphore (impl=xsync) run the
// same loops in one `go test -bench` run, so that benchstat compares them:
//
//	go test -run '^$' -bench . -benchmem -count 10 ./xsync/semaphore | tee xsync.txt
//	benchstat -col /impl xsync.txt
//
// Each loop calls the concrete type, as migrated code does, so that neither side
// pays for an interface call the other does not.

// work is a tiny critical section that touches no shared memory.
//
//go:noinline
func work() int {
	x := 0
	for i := range 16 {
		x += i * i
	}
	return x
}

// Uncontended Acquire + Release.
func BenchmarkWeighted_AcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=dropin", func(b *testing.B) {
		s := semaphore.NewWeighted(1)
		for b.Loop() {
			_ = s.Acquire(ctx, 1)
			s.Release(1)
		}
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(1)
		for b.Loop() {
			_ = s.Acquire(ctx, 1)
			s.Release(1)
		}
	})
}

// Uncontended Acquire + Release on a size of math.MaxInt64, which the drop-in
// counts on its exact path (a mutex, as in x/sync) rather than on the core.
func BenchmarkWeighted_AcquireReleaseMaxInt64(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=dropin", func(b *testing.B) {
		s := semaphore.NewWeighted(math.MaxInt64)
		for b.Loop() {
			_ = s.Acquire(ctx, 1)
			s.Release(1)
		}
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(math.MaxInt64)
		for b.Loop() {
			_ = s.Acquire(ctx, 1)
			s.Release(1)
		}
	})
}

// Uncontended TryAcquire + Release.
func BenchmarkWeighted_TryAcquireRelease(b *testing.B) {
	b.Run("impl=dropin", func(b *testing.B) {
		s := semaphore.NewWeighted(1)
		for b.Loop() {
			_ = s.TryAcquire(1)
			s.Release(1)
		}
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(1)
		for b.Loop() {
			_ = s.TryAcquire(1)
			s.Release(1)
		}
	})
}

// A size-1 semaphore handed between all the goroutines of RunParallel.
func BenchmarkWeighted_Handoff(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=dropin", func(b *testing.B) {
		s := semaphore.NewWeighted(1)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = s.Acquire(ctx, 1)
				_ = work()
				s.Release(1)
			}
		})
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(1)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = s.Acquire(ctx, 1)
				_ = work()
				s.Release(1)
			}
		})
	})
}

// The same handoff with a context.WithTimeout per call, the usual x/sync idiom
// for a bounded wait.
func BenchmarkWeighted_HandoffTimeout(b *testing.B) {
	const d = time.Second
	b.Run("impl=dropin", func(b *testing.B) {
		s := semaphore.NewWeighted(1)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				if s.Acquire(ctx, 1) == nil {
					_ = work()
					s.Release(1)
				}
				cancel()
			}
		})
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(1)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				if s.Acquire(ctx, 1) == nil {
					_ = work()
					s.Release(1)
				}
				cancel()
			}
		})
	})
}

// Weighted requests of 1..8 units on a size of 16.
func BenchmarkWeighted_Mix(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=dropin", func(b *testing.B) {
		s := semaphore.NewWeighted(16)
		b.RunParallel(func(pb *testing.PB) {
			n := int64(0)
			for pb.Next() {
				n = n%8 + 1
				_ = s.Acquire(ctx, n)
				_ = work()
				s.Release(n)
			}
		})
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(16)
		b.RunParallel(func(pb *testing.PB) {
			n := int64(0)
			for pb.Next() {
				n = n%8 + 1
				_ = s.Acquire(ctx, n)
				_ = work()
				s.Release(n)
			}
		})
	})
}
