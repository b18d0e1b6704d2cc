package group_test

import (
	"context"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/group"
)

// The group (impl=group), errgroup with SetLimit (impl=errgroup) and a pool of
// long-lived workers fed by a channel (impl=chanpool) run the same batch of tasks
// at the same limit in one `go test -bench` run, so that benchstat compares them:
//
//	go test -run '^$' -bench . -benchmem -count 10 ./group | tee group.txt
//	benchstat -col /impl group.txt
//
// One op is one batch of `tasks` tasks; each task does `work` iterations of
// arithmetic, so the cost per task is the scheduling around a small task.

const (
	tasks = 256
	limit = 4
)

//go:noinline
func spin(n int) int {
	x := 0
	for i := range n {
		x += i * i
	}
	return x
}

func BenchmarkBatch(b *testing.B) {
	for _, w := range []struct {
		name string
		n    int
	}{{"work=tiny", 10}, {"work=small", 2000}} {
		task := func() error { _ = spin(w.n); return nil }
		b.Run(w.name+"/impl=group", func(b *testing.B) {
			ctx := context.Background()
			sem := semaphore.New(limit)
			b.ReportAllocs()
			for b.Loop() {
				g := group.New(sem)
				for range tasks {
					_ = g.Go(ctx, 1, task)
				}
				_ = g.Wait()
			}
		})
		b.Run(w.name+"/impl=errgroup", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var g errgroup.Group
				g.SetLimit(limit)
				for range tasks {
					g.Go(task)
				}
				_ = g.Wait()
			}
		})
		b.Run(w.name+"/impl=chanpool", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = chanPool(limit, tasks, task)
			}
		})
	}
}

// chanPool runs n tasks on `workers` goroutines that take them from a channel,
// and returns the first error: the hand-written pool the group replaces.
func chanPool(workers, n int, task func() error) error {
	work := make(chan func() error)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Go(func() {
			for f := range work {
				if err := f(); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for range n {
		work <- task
	}
	close(work)
	wg.Wait()
	return first
}
