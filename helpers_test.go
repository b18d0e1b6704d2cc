package semaphore_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// started runs Acquire on its own goroutine and reports its result.
func started(ctx context.Context, s *semaphore.Semaphore, n int64) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx, n) }()
	return done
}

// together runs each function on a goroutine of its own, released by a spinning
// barrier so that they start within nanoseconds of each other (a channel's close
// wakes them microseconds apart), and waits for all of them.
func together(fs ...func()) {
	var ready atomic.Int32
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(func() {
			ready.Add(1)
			for ready.Load() < int32(len(fs)) {
			}
			f()
		})
	}
	wg.Wait()
}

// queue starts one Acquire per n, in order, waiting in the bubble after each so
// that their arrival order is exactly the order given.
func queue(ctx context.Context, s *semaphore.Semaphore, ns ...int64) []<-chan error {
	out := make([]<-chan error, len(ns))
	for i, n := range ns {
		out[i] = started(ctx, s, n)
		synctest.Wait()
	}
	return out
}

// finished reports which of the calls have returned, with their errors.
func finished(calls []<-chan error) map[int]error {
	got := map[int]error{}
	for i, c := range calls {
		select {
		case err := <-c:
			got[i] = err
		default:
		}
	}
	return got
}

func requirePanic(t *testing.T, contains string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		require.NotNil(t, r, "expected a panic containing %q", contains)
		assert.Contains(t, fmt.Sprint(r), contains)
	}()
	f()
}

// panics reports whether f panicked, and with what.
func panics(f func()) (msg string, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			msg, ok = fmt.Sprint(r), true
		}
	}()
	f()
	return "", false
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	events []semaphore.WaitEvent
	breaks []error
	during func(*semaphore.Semaphore) // run inside WaitEnded, to test what it may call
}

func (r *recorder) WaitEnded(s *semaphore.Semaphore, e semaphore.WaitEvent) {
	if r.during != nil {
		r.during(s)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) Broken(s *semaphore.Semaphore, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.breaks = append(r.breaks, cause)
}

func (r *recorder) got() []semaphore.WaitEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]semaphore.WaitEvent(nil), r.events...)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
