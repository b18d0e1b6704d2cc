package semaphore_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	xsem "golang.org/x/sync/semaphore"

	"github.com/fairsem/semaphore"
)

// The peers, each run in the same `go test -bench` as this package under the
// sub-benchmark key impl=NAME, so benchstat can compare them side by side:
//
//	go test -run '^$' -bench . -count 10 . | tee new.txt
//	benchstat -col /impl new.txt
//
// impl=fairsem is this package, impl=xsync golang.org/x/sync/semaphore.Weighted,
// impl=channel a buffered channel used as a semaphore, impl=mutex sync.Mutex.

type chanSem chan struct{}

func (c chanSem) acquire() { c <- struct{}{} }
func (c chanSem) release() { <-c }
func (c chanSem) tryAcquire() bool {
	select {
	case c <- struct{}{}:
		return true
	default:
		return false
	}
}

// protocolFloor is the floor of the uncontended path, impl=atomics: the atomic
// operations of this package's lock-free Acquire and Release, written inline with
// their checks, and nothing else (no call, no context, no flag handling). It is
// what an exact, lock-free acquire/release on one state word costs: a load, then a
// compare-and-swap of the value loaded, on each side, and the capacity load that
// makes Release's over-release check exact. sync.Mutex needs neither load: its
// Lock swaps a known constant and its Unlock is one atomic add.
type protocolFloor struct{ state, capacity atomic.Int64 }

func (s *protocolFloor) init() {
	s.state.Store(1 << 18)
	s.capacity.Store(1)
}

func (s *protocolFloor) acquire() {
	st := s.state.Load()
	if st&7 != 0 || st>>18 < 1 || !s.state.CompareAndSwap(st, st-1<<18) {
		panic("protocolFloor: not acquired")
	}
}

func (s *protocolFloor) release() {
	st := s.state.Load()
	if st&7 != 0 || uint64(1) > uint64(s.capacity.Load()-st>>18) || !s.state.CompareAndSwap(st, st+1<<18) {
		panic("protocolFloor: not released")
	}
}

// work stands for the tiny critical section of the contended benchmarks. It touches
// no shared memory, so that it costs the same whether or not it runs in parallel.
//
//go:noinline
func work() int {
	x := 0
	for i := range 16 {
		x += i * i
	}
	return x
}

// P1: uncontended Acquire(ctx, 1) + Release(1).
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=fairsem", func(b *testing.B) {
		s := semaphore.New(1)
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Acquire(ctx, 1)
			s.Release(1)
		}
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(1)
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Acquire(ctx, 1)
			s.Release(1)
		}
	})
	b.Run("impl=channel", func(b *testing.B) {
		c := make(chanSem, 1)
		b.ReportAllocs()
		for b.Loop() {
			c.acquire()
			c.release()
		}
	})
	b.Run("impl=atomics", func(b *testing.B) {
		var s protocolFloor
		s.init()
		b.ReportAllocs()
		for b.Loop() {
			s.acquire()
			s.release()
		}
	})
	b.Run("impl=mutex", func(b *testing.B) {
		var mu sync.Mutex
		b.ReportAllocs()
		for b.Loop() {
			mu.Lock()
			//lint:ignore SA2001 the empty critical section is what is measured
			mu.Unlock()
		}
	})
}

// P2: uncontended TryAcquire(1) + Release(1).
func BenchmarkTryAcquireRelease(b *testing.B) {
	b.Run("impl=fairsem", func(b *testing.B) {
		s := semaphore.New(1)
		b.ReportAllocs()
		for b.Loop() {
			s.TryAcquire(1)
			s.Release(1)
		}
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(1)
		b.ReportAllocs()
		for b.Loop() {
			s.TryAcquire(1)
			s.Release(1)
		}
	})
	b.Run("impl=channel", func(b *testing.B) {
		c := make(chanSem, 1)
		b.ReportAllocs()
		for b.Loop() {
			c.tryAcquire()
			c.release()
		}
	})
	b.Run("impl=atomics", func(b *testing.B) {
		var s protocolFloor
		s.init()
		b.ReportAllocs()
		for b.Loop() {
			s.acquire()
			s.release()
		}
	})
	b.Run("impl=mutex", func(b *testing.B) {
		var mu sync.Mutex
		b.ReportAllocs()
		for b.Loop() {
			mu.TryLock()
			mu.Unlock()
		}
	})
}

// P7: AcquireUnits + Units.Release against the plain pair.
func BenchmarkAcquireUnitsRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=fairsem", func(b *testing.B) {
		s := semaphore.New(1)
		b.ReportAllocs()
		for b.Loop() {
			u, _ := s.AcquireUnits(ctx, 1)
			u.Release()
		}
	})
	b.Run("impl=fairsem-plain", func(b *testing.B) {
		s := semaphore.New(1)
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Acquire(ctx, 1)
			s.Release(1)
		}
	})
}

// measure runs the timed part of a contended benchmark and reports how many
// acquisitions per op had to wait, and the exact number of allocations per op and
// per blocked call: the testing package truncates allocs/op to an integer, which
// hides one allocation spread over the calls that block.
func measure(b *testing.B, s *semaphore.Semaphore, run func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	run()
	b.StopTimer()
	runtime.ReadMemStats(&after)
	mallocs, queued := float64(after.Mallocs-before.Mallocs), float64(s.Stats().Queued)
	b.ReportMetric(queued/float64(b.N), "queued/op")
	b.ReportMetric(mallocs/float64(b.N), "mallocs/op")
	if queued > 0 {
		b.ReportMetric(mallocs/queued, "mallocs/blocked")
	}
}

// P3: capacity-1 handoff under contention, strict FIFO. Run with -cpu 2,4,8.
func BenchmarkHandoff(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=fairsem", func(b *testing.B) {
		s := semaphore.New(1)
		b.ReportAllocs()
		measure(b, s, func() {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = s.Acquire(ctx, 1)
					_ = work()
					s.Release(1)
				}
			})
		})
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(1)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = s.Acquire(ctx, 1)
				_ = work()
				s.Release(1)
			}
		})
	})
	b.Run("impl=channel", func(b *testing.B) {
		c := make(chanSem, 1)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.acquire()
				_ = work()
				c.release()
			}
		})
	})
	b.Run("impl=mutex", func(b *testing.B) {
		var mu sync.Mutex
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				mu.Lock()
				_ = work()
				mu.Unlock()
			}
		})
	})
}

// P4: the blocking path with a deadline: AcquireTimeout against x/sync's Acquire
// with a context.WithTimeout per call (what x/sync users must write), plus this
// package's Acquire with the same context for reference.
func BenchmarkHandoffTimeout(b *testing.B) {
	const d = time.Second
	b.Run("impl=fairsem", func(b *testing.B) {
		s := semaphore.New(1)
		b.ReportAllocs()
		measure(b, s, func() {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if s.AcquireTimeout(d, 1) == nil {
						_ = work()
						s.Release(1)
					}
				}
			})
		})
	})
	b.Run("impl=fairsem-ctx", func(b *testing.B) {
		s := semaphore.New(1)
		b.ReportAllocs()
		measure(b, s, func() {
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
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(1)
		b.ReportAllocs()
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

// P5: weighted requests of 1..8 units on a capacity of 16.
func BenchmarkWeightedMix(b *testing.B) {
	ctx := context.Background()
	b.Run("impl=fairsem", func(b *testing.B) {
		s := semaphore.New(16)
		b.ReportAllocs()
		measure(b, s, func() {
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
	})
	b.Run("impl=xsync", func(b *testing.B) {
		s := xsem.NewWeighted(16)
		b.ReportAllocs()
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

// P6: the cost of a large wait list. Each iteration parks `waiters` goroutines on a
// channel and then the same number in Acquire, and reports the heap the semaphore
// adds per waiter beyond the goroutines themselves; then the time to cancel the one
// waiter in the middle of the list, to wake k = 1000 waiters with one Release, and to
// Break with the rest still waiting. impl=channel is the floor of that last step:
// closing a channel that as many goroutines wait on, which wakes each of them and
// does nothing else.
func BenchmarkManyWaiters(b *testing.B) {
	const waiters = 100_000
	b.Run("impl=fairsem", func(b *testing.B) {
		var perWaiter, cancelMiddle, wakeK, breakAll float64
		for b.Loop() {
			release := make(chan struct{})
			var parked sync.WaitGroup
			parkAll(&parked, waiters, func(int) { <-release })
			for runtime.NumGoroutine() < waiters {
				runtime.Gosched()
			}
			base := liveHeap()
			close(release)
			parked.Wait()

			s := semaphore.New(waiters)
			_ = s.Acquire(context.Background(), waiters)
			ctx, cancel := context.WithCancel(context.Background())
			parkAll(&parked, waiters, func(i int) {
				c := context.Background()
				if i == waiters/2 {
					c = ctx
				}
				if s.Acquire(c, 1) == nil {
					s.Release(1)
				}
			})
			for s.Waiters() != waiters {
				runtime.Gosched()
			}
			perWaiter += (float64(liveHeap()) - float64(base)) / waiters

			start := time.Now()
			cancel()
			for s.Waiters() != waiters-1 {
				runtime.Gosched()
			}
			cancelMiddle += float64(time.Since(start).Nanoseconds())

			start = time.Now()
			s.Release(1000)
			wakeK += float64(time.Since(start).Nanoseconds()) / 1000

			start = time.Now()
			s.Break(nil)
			breakAll += float64(time.Since(start).Nanoseconds())
			parked.Wait()
		}
		n := float64(b.N)
		b.ReportMetric(perWaiter/n, "B/waiter")
		b.ReportMetric(cancelMiddle/n, "ns/cancel-middle")
		b.ReportMetric(wakeK/n, "ns/wake-per-waiter")
		b.ReportMetric(breakAll/n/1e6, "ms/break")
	})
	b.Run("impl=channel", func(b *testing.B) {
		var breakAll float64
		for b.Loop() {
			ch := make(chan struct{})
			var parked sync.WaitGroup
			parkAll(&parked, waiters, func(int) { <-ch })
			for runtime.NumGoroutine() < waiters {
				runtime.Gosched()
			}
			start := time.Now()
			close(ch)
			breakAll += float64(time.Since(start).Nanoseconds())
			parked.Wait()
		}
		b.ReportMetric(breakAll/float64(b.N)/1e6, "ms/break")
	})
}

// parkAll starts n goroutines of one shape, so that the heap they take is the same
// whatever f blocks on.
func parkAll(wg *sync.WaitGroup, n int, f func(i int)) {
	for i := range n {
		wg.Go(func() { f(i) })
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// P7: the cost of one idle semaphore, as in a map of per-key limits: New, and the
// heap each one keeps, over a million of them (bytes/semaphore).
func BenchmarkNew(b *testing.B) {
	const idle = 1_000_000
	perSemaphore := func(b *testing.B, newOne func() any) {
		b.ReportAllocs()
		for b.Loop() {
			_ = newOne()
		}
		b.StopTimer()
		keep := make([]any, idle)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = newOne()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/idle, "bytes/semaphore")
		runtime.KeepAlive(keep)
	}
	b.Run("impl=fairsem", func(b *testing.B) {
		perSemaphore(b, func() any { return semaphore.New(16) })
	})
	b.Run("impl=xsync", func(b *testing.B) {
		perSemaphore(b, func() any { return xsem.NewWeighted(16) })
	})
}

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
