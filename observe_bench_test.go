package semaphore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/fairsem/semaphore"
)

// countingObserver is the cheapest useful Observer: it counts waits and adds up
// their durations, as a histogram's bucket increment would.
type countingObserver struct {
	waits atomic.Int64
	nanos atomic.Int64
}

func (o *countingObserver) WaitEnded(_ *semaphore.Semaphore, e semaphore.WaitEvent) {
	o.waits.Add(1)
	o.nanos.Add(int64(e.Waited))
}

func (o *countingObserver) Broken(*semaphore.Semaphore, error) {}

// The cost of observing, side by side in one run:
//
//	go test -run '^$' -bench 'Observer|Tracking' -count 10 . | tee obs.txt
//	benchstat -col /observer obs.txt
//
// observer=none is a semaphore without WithObserver, observer=counting one with
// countingObserver. The uncontended pairs never reach the observer; the handoff
// waits on every other call, so it shows the cost per observed wait.
func BenchmarkObserver(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []semaphore.Option
	}{
		{"none", nil},
		{"counting", []semaphore.Option{semaphore.WithObserver(&countingObserver{})}},
	} {
		b.Run("op=AcquireRelease/observer="+tc.name, func(b *testing.B) {
			s := semaphore.New(1, tc.opts...)
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Acquire(ctx, 1)
				s.Release(1)
			}
		})
		b.Run("op=AcquireUnitsRelease/observer="+tc.name, func(b *testing.B) {
			s := semaphore.New(1, tc.opts...)
			b.ReportAllocs()
			for b.Loop() {
				u, _ := s.AcquireUnits(ctx, 1)
				u.Release()
			}
		})
		b.Run("op=Handoff/observer="+tc.name, func(b *testing.B) {
			s := semaphore.New(1, tc.opts...)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = s.Acquire(ctx, 1)
					_ = work()
					s.Release(1)
				}
			})
		})
	}
}

// The cost of holder tracking and leak detection per AcquireUnits + Release.
func BenchmarkHolderTracking(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []semaphore.Option
	}{
		{"off", nil},
		{"holders", []semaphore.Option{semaphore.WithHolderTracking()}},
		{"leaks", []semaphore.Option{semaphore.WithLeakDetection(func(semaphore.LeakReport) {})}},
		{"stacks", []semaphore.Option{semaphore.WithAcquireStacks()}},
	} {
		b.Run("tracking="+tc.name, func(b *testing.B) {
			s := semaphore.New(1, tc.opts...)
			b.ReportAllocs()
			for b.Loop() {
				u, _ := s.AcquireUnits(ctx, 1)
				u.Release()
			}
		})
	}
}
