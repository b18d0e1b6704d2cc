package etcdsem

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// The benchmarks run etcdsem side by side with etcd's own concurrency.Mutex on
// the same embedded server: a capacity-1 semaphore is a mutex.

func benchClients(b *testing.B, n int) []*clientv3.Client {
	ep := sharedEndpoint(b)
	clis := make([]*clientv3.Client, n)
	for i := range clis {
		clis[i] = newClient(b, ep)
	}
	return clis
}

// BenchmarkUncontended: one caller, acquire and release, one op each.
func BenchmarkUncontended(b *testing.B) {
	ctx := context.Background()
	b.Run("etcdsem", func(b *testing.B) {
		cli := benchClients(b, 1)[0]
		s := newSem(b, cli, fmt.Sprintf("bench/uncontended-%d", b.N), WithCapacity(1))
		warm, err := s.Acquire(ctx, 1) // the lease exists before timing
		require.NoError(b, err)
		require.NoError(b, warm.Release(ctx))
		b.ResetTimer()
		for b.Loop() {
			u, err := s.Acquire(ctx, 1)
			if err != nil {
				b.Fatal(err)
			}
			if err := u.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("concurrency.Mutex", func(b *testing.B) {
		cli := benchClients(b, 1)[0]
		sess, err := concurrency.NewSession(cli)
		require.NoError(b, err)
		defer sess.Close()
		m := concurrency.NewMutex(sess, fmt.Sprintf("bench/mutex-uncontended-%d", b.N))
		b.ResetTimer()
		for b.Loop() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHandoff: a capacity-1 semaphore (a mutex) passed between w
// contenders spread over 5 clients; one op is one grant.
func BenchmarkHandoff(b *testing.B) {
	ctx := context.Background()
	for _, w := range []int{10, 100} {
		b.Run(fmt.Sprintf("waiters=%d/etcdsem", w), func(b *testing.B) {
			clis := benchClients(b, 5)
			name := fmt.Sprintf("bench/handoff-%d-%d", w, b.N)
			sems := make([]*Semaphore, len(clis))
			for i, cli := range clis {
				sems[i] = newSem(b, cli, name, WithCapacity(1))
				u, err := sems[i].Acquire(ctx, 1)
				require.NoError(b, err)
				require.NoError(b, u.Release(ctx))
			}
			runHandoff(b, w, func(i int) func() error {
				s := sems[i%len(sems)]
				return func() error {
					u, err := s.Acquire(ctx, 1)
					if err != nil {
						return err
					}
					return u.Release(ctx)
				}
			})
		})
		b.Run(fmt.Sprintf("waiters=%d/concurrency.Mutex", w), func(b *testing.B) {
			clis := benchClients(b, 5)
			name := fmt.Sprintf("bench/mutex-handoff-%d-%d", w, b.N)
			var sessions []*concurrency.Session
			var mutexes []*concurrency.Mutex
			for i := range w {
				sess, err := concurrency.NewSession(clis[i%len(clis)])
				require.NoError(b, err)
				sessions = append(sessions, sess)
				mutexes = append(mutexes, concurrency.NewMutex(sess, name))
			}
			defer func() {
				for _, s := range sessions {
					s.Close()
				}
			}()
			runHandoff(b, w, func(i int) func() error {
				m := mutexes[i]
				return func() error {
					if err := m.Lock(ctx); err != nil {
						return err
					}
					return m.Unlock(ctx)
				}
			})
		})
	}
}

// runHandoff runs b.N grants over w goroutines and reports handoffs/s.
func runHandoff(b *testing.B, w int, op func(i int) func() error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, w)
	b.ResetTimer()
	for i := range w {
		wg.Add(1)
		f := op(i)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := f(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handoffs/s")
}
