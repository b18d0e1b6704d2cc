package keyed_test

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	xsemaphore "golang.org/x/sync/semaphore"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

// xsyncMap is the per-key limit a service team writes by hand, which a Set
// replaces: a map of golang.org/x/sync semaphores under one mutex, with a
// reference count per key so that the map holds only the keys in use, and
// optionally a global x/sync semaphore taken after the key's.
type xsyncMap struct {
	capacity int64
	global   *xsemaphore.Weighted // nil: none
	mu       sync.Mutex
	m        map[string]*xsyncEntry // guarded by mu
}

type xsyncEntry struct {
	sem  *xsemaphore.Weighted
	refs int // guarded by xsyncMap.mu
}

func newXsyncMap(capacity int64, global bool) *xsyncMap {
	x := &xsyncMap{capacity: capacity, m: make(map[string]*xsyncEntry)}
	if global {
		x.global = xsemaphore.NewWeighted(1 << 40)
	}
	return x
}

func (x *xsyncMap) acquire(ctx context.Context, key string, n int64) (*xsyncEntry, error) {
	x.mu.Lock()
	e := x.m[key]
	if e == nil {
		e = &xsyncEntry{sem: xsemaphore.NewWeighted(x.capacity)}
		x.m[key] = e
	}
	e.refs++
	x.mu.Unlock()
	if err := e.sem.Acquire(ctx, n); err != nil {
		x.leave(key, e)
		return nil, err
	}
	if x.global != nil {
		if err := x.global.Acquire(ctx, n); err != nil {
			e.sem.Release(n)
			x.leave(key, e)
			return nil, err
		}
	}
	return e, nil
}

func (x *xsyncMap) release(key string, e *xsyncEntry, n int64) {
	if x.global != nil {
		x.global.Release(n)
	}
	e.sem.Release(n)
	x.leave(key, e)
}

func (x *xsyncMap) leave(key string, e *xsyncEntry) {
	x.mu.Lock()
	if e.refs--; e.refs == 0 {
		delete(x.m, key)
	}
	x.mu.Unlock()
}

// tenantKeys returns n keys named as tenants are.
func tenantKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "tenant-" + strconv.Itoa(i)
	}
	return keys
}

// The second levels of the grid: none, a global semaphore (WithGlobal, beside a
// global x/sync semaphore in the map), and the set's fair limit (WithLimit,
// beside the same global x/sync semaphore), never reached: they cost what
// they cost when they do not bind.
var secondLevels = []string{"none", "on", "limit"}

func newBenchSet(second string) *keyed.Set {
	switch second {
	case "on":
		return keyed.New(4, keyed.WithGlobal(semaphore.New(1<<40)))
	case "limit":
		return keyed.New(4, keyed.WithLimit(1<<40))
	}
	return keyed.New(4)
}

// BenchmarkTenant is the grid of a tenant key's hot path: parallel goroutines
// (one per -cpu) acquire and release one unit of a key of capacity 4, cycling
// through 1, 100 or 100,000 keys, each goroutine from its own starting point.
//
//   - use=kept: every key is held by one holder for the whole run, so each op
//     finds its key active and leaves it active (with one key, all goroutines
//     share the hot key);
//   - use=churn: nobody else holds the keys, so each op makes its key active
//     and inactive again (unless, with one key, another goroutine holds it at
//     that moment).
//
// impl=keyed is a Set with AcquireInto and Units.Release, which allocate
// nothing; impl=keyed-units is Acquire, which allocates the Units;
// impl=xsyncmap the hand-written map of x/sync semaphores above. Run the rounds
// interleaved (BENCHMARKS.md gives the command).
func BenchmarkTenant(b *testing.B) {
	ctx := context.Background()
	for _, nkeys := range []int{1, 100, 100_000} {
		keys := tenantKeys(nkeys)
		for _, use := range []string{"kept", "churn"} {
			for _, second := range secondLevels {
				name := "keys=" + strconv.Itoa(nkeys) + "/use=" + use + "/global=" + second
				b.Run(name+"/impl=keyed", func(b *testing.B) {
					s := newBenchSet(second)
					if use == "kept" {
						held := make([]keyed.Units, nkeys)
						for i, k := range keys {
							if err := s.AcquireInto(ctx, &held[i], k, 1); err != nil {
								b.Fatal(err)
							}
						}
						b.Cleanup(func() { // after the timed part
							for i := range held {
								held[i].Release()
							}
						})
					}
					var next atomic.Uint64
					b.ReportAllocs()
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						i := int(next.Add(1)) * 7919
						var u keyed.Units
						for pb.Next() {
							i++
							if err := s.AcquireInto(ctx, &u, keys[i%nkeys], 1); err != nil {
								b.Fatal(err)
							}
							u.Release()
						}
					})
				})
				b.Run(name+"/impl=keyed-units", func(b *testing.B) {
					s := newBenchSet(second)
					if use == "kept" {
						for _, k := range keys {
							u, err := s.Acquire(ctx, k, 1)
							if err != nil {
								b.Fatal(err)
							}
							b.Cleanup(u.Release)
						}
					}
					var next atomic.Uint64
					b.ReportAllocs()
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						i := int(next.Add(1)) * 7919
						for pb.Next() {
							i++
							u, err := s.Acquire(ctx, keys[i%nkeys], 1)
							if err != nil {
								b.Fatal(err)
							}
							u.Release()
						}
					})
				})
				b.Run(name+"/impl=xsyncmap", func(b *testing.B) {
					x := newXsyncMap(4, second != "none")
					if use == "kept" {
						for _, k := range keys {
							e, err := x.acquire(ctx, k, 1)
							if err != nil {
								b.Fatal(err)
							}
							b.Cleanup(func() { x.release(k, e, 1) })
						}
					}
					var next atomic.Uint64
					b.ReportAllocs()
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						i := int(next.Add(1)) * 7919
						for pb.Next() {
							i++
							key := keys[i%nkeys]
							e, err := x.acquire(ctx, key, 1)
							if err != nil {
								b.Fatal(err)
							}
							x.release(key, e, 1)
						}
					})
				})
			}
		}
	}
}

// BenchmarkActiveKeyBytes holds 100,000 keys active at once, each by one
// holder, and reports the heap they take per key (B/key): with a Units handle
// per holder (impl=keyed-units, Acquire), with the holders' Units in a slice
// made beforehand (impl=keyed, AcquireInto: the key's own cost), and the
// hand-written map (impl=xsyncmap, whose holders keep the entry pointer). A
// fair limit adds its flow per key (impl=keyed-limit, AcquireInto). The slices
// that keep the holders are made before the measurement.
func BenchmarkActiveKeyBytes(b *testing.B) {
	const active = 100_000
	ctx := context.Background()
	keys := make([]string, active)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	measure := func(b *testing.B, hold func() (release func())) {
		var perKey float64
		for range b.N {
			before := heap()
			release := hold()
			perKey = float64(heap()-before) / active
			release()
		}
		b.ReportMetric(perKey, "B/key")
	}
	b.Run("impl=keyed-units", func(b *testing.B) {
		held := make([]*keyed.Units, active)
		measure(b, func() func() {
			s := keyed.New(1)
			for i, k := range keys {
				held[i], _ = s.TryAcquire(k, 1)
			}
			return func() {
				for _, u := range held {
					u.Release()
				}
			}
		})
	})
	for _, impl := range []string{"keyed", "keyed-limit"} {
		b.Run("impl="+impl, func(b *testing.B) {
			// The holders' Units are counted apart: they belong to the holders.
			held := make([]keyed.Units, active)
			measure(b, func() func() {
				s := keyed.New(1)
				if impl == "keyed-limit" {
					s = keyed.New(1, keyed.WithLimit(active))
				}
				for i, k := range keys {
					if err := s.AcquireInto(ctx, &held[i], k, 1); err != nil {
						b.Fatal(err)
					}
				}
				return func() {
					for i := range held {
						held[i].Release()
					}
				}
			})
		})
	}
	b.Run("impl=xsyncmap", func(b *testing.B) {
		held := make([]*xsyncEntry, active)
		measure(b, func() func() {
			x := newXsyncMap(1, false)
			for i, k := range keys {
				held[i], _ = x.acquire(ctx, k, 1)
			}
			return func() {
				for i, e := range held {
					x.release(keys[i], e, 1)
				}
			}
		})
	})
}
