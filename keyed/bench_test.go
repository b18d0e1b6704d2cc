package keyed_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	xsemaphore "golang.org/x/sync/semaphore"

	"github.com/fairsem/semaphore/keyed"
)

// xsyncMap is the hand-written per-key limit a Set replaces: a map of
// golang.org/x/sync semaphores under a mutex, with a reference count per key so
// that the map holds only the keys in use.
type xsyncMap struct {
	capacity int64
	mu       sync.Mutex
	m        map[string]*xsyncEntry // guarded by mu
}

type xsyncEntry struct {
	sem  *xsemaphore.Weighted
	refs int // guarded by xsyncMap.mu
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
	return e, nil
}

func (x *xsyncMap) release(key string, e *xsyncEntry, n int64) {
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

// BenchmarkAcquireRelease acquires and releases one unit of a key, from
// parallel goroutines that cycle through 1, 100 or 100,000 keys of capacity 4,
// with a Set (impl=keyed) and with a map of x/sync semaphores (impl=xsyncmap).
// With one key the goroutines contend for the key's semaphore; with 100,000
// nearly every call makes its key active and inactive again.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, nkeys := range []int{1, 100, 100_000} {
		keys := make([]string, nkeys)
		for i := range keys {
			keys[i] = "tenant-" + strconv.Itoa(i)
		}
		b.Run("keys="+strconv.Itoa(nkeys), func(b *testing.B) {
			b.Run("impl=keyed", func(b *testing.B) {
				s := keyed.New(4)
				var next atomic.Uint64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
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
			b.Run("impl=xsyncmap", func(b *testing.B) {
				x := &xsyncMap{capacity: 4, m: make(map[string]*xsyncEntry)}
				var next atomic.Uint64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
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
		})
	}
}

// BenchmarkActiveKey acquires and releases one unit of keys that stay active
// (each holds one unit for the whole run, of a capacity of 4), from parallel
// goroutines cycling through 1 or 100 keys: the path of a key already active.
// impl=keyed-limit adds a limit of the set's own that nobody waits at.
func BenchmarkActiveKey(b *testing.B) {
	for _, nkeys := range []int{1, 100} {
		keys := make([]string, nkeys)
		for i := range keys {
			keys[i] = "tenant-" + strconv.Itoa(i)
		}
		b.Run("keys="+strconv.Itoa(nkeys), func(b *testing.B) {
			for _, impl := range []string{"keyed", "keyed-limit"} {
				b.Run("impl="+impl, func(b *testing.B) {
					var opts []keyed.Option
					if impl == "keyed-limit" {
						opts = append(opts, keyed.WithLimit(1<<40))
					}
					s := keyed.New(4, opts...)
					for _, k := range keys {
						u, _ := s.TryAcquire(k, 1)
						defer u.Release()
					}
					var next atomic.Uint64
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						ctx := context.Background()
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
			}
			b.Run("impl=xsyncmap", func(b *testing.B) {
				x := &xsyncMap{capacity: 4, m: make(map[string]*xsyncEntry)}
				for _, k := range keys {
					e, _ := x.acquire(context.Background(), k, 1)
					defer x.release(k, e, 1)
				}
				var next atomic.Uint64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
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
		})
	}
}
