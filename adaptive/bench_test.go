package adaptive_test

import (
	"context"
	"testing"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

// BenchmarkDo is the steady path: a call granted at once, measured and
// ended, the algorithm run once per window.
func BenchmarkDo(b *testing.B) {
	l := adaptive.New(semaphore.New(1), adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: 64, MinLimit: 64, MaxLimit: 64}))
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Do(ctx, fn)
	}
}

// BenchmarkDoParallel is the same under contention for the limiter's lock.
func BenchmarkDoParallel(b *testing.B) {
	l := adaptive.New(semaphore.New(1), adaptive.NewGradient2(adaptive.Gradient2Config{InitialLimit: 1024, MinLimit: 1024, MaxLimit: 1024}))
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			_ = l.Do(ctx, fn)
		}
	})
}
