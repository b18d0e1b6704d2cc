package adaptive_test

import (
	"context"
	"testing"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// fixedLimit is an Algorithm that keeps its limit: the benchmarks measure the
// Limiter's own cost, with the algorithm run once per window.
type fixedLimit int

func (f fixedLimit) Limit() int                 { return int(f) }
func (f fixedLimit) Update(adaptive.Sample) int { return int(f) }

// BenchmarkAcquireRelease is the floor Do is compared with: a bare
// Acquire/Release of the semaphore a Limiter drives, granted at once.
func BenchmarkAcquireRelease(b *testing.B) {
	sem := semaphore.New(64)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if sem.Acquire(ctx, 1) == nil {
			sem.Release(1)
		}
	}
}

// BenchmarkDo is the steady path: a call granted at once, measured and
// ended, the algorithm run once per window.
func BenchmarkDo(b *testing.B) {
	l := adaptive.New(semaphore.New(64), fixedLimit(64))
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Do(ctx, fn)
	}
}

// BenchmarkAcquireReleaseParallel and BenchmarkDoParallel are the same under
// contention, for the semaphore's state and the limiter's lock.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	sem := semaphore.New(1024)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if sem.Acquire(ctx, 1) == nil {
				sem.Release(1)
			}
		}
	})
}

func BenchmarkDoParallel(b *testing.B) {
	l := adaptive.New(semaphore.New(1024), fixedLimit(1024))
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			_ = l.Do(ctx, fn)
		}
	})
}
