package etcdsem

import (
	"context"
	"errors"
)

// WithSemaphore acquires n units of s, runs fn with a context that is cancelled
// (with a cause wrapping ErrLost) if the units are lost, and releases them when
// fn returns, whatever it returns. It returns Acquire's error without running
// fn, or fn's error joined with Release's.
func WithSemaphore(ctx context.Context, s *Semaphore, n int64, fn func(context.Context) error) error {
	u, err := s.Acquire(ctx, n)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-u.Lost():
			cancel(u.Err())
		case <-stop:
		}
	}()
	ferr := fn(fctx)
	close(stop)
	<-watched
	cancel(nil)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), s.sess.attemptTimeout())
	defer rcancel()
	return errors.Join(ferr, u.Release(rctx))
}
