package admission_test

import (
	"context"
	"testing"

	"github.com/fairsem/semaphore/admission"
)

// Admit and release with room to spare: the cost of the bookkeeping.
func BenchmarkAdmitRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("uncontended", func(b *testing.B) {
		c := admission.New(limits(1<<20, 1<<40), admission.WithName("bench"))
		b.ReportAllocs()
		for b.Loop() {
			p, _ := c.Acquire(ctx, "op", 1024)
			p.Release()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		c := admission.New(limits(1<<20, 1<<40), admission.WithName("bench"), admission.WithCPUConcurrency(1<<20))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, _ := c.Acquire(ctx, "op", 1024)
				done := p.NeedCPU()
				done()
				p.Release()
			}
		})
	})
	b.Run("parallel-queued", func(b *testing.B) {
		c := admission.New(limits(1, 1<<40), admission.WithName("bench"))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, _ := c.Acquire(ctx, "op", 1024)
				p.Release()
			}
		})
		b.ReportMetric(float64(c.Stats().QueuedForAdmission)/float64(b.N), "queued/op")
	})
}
