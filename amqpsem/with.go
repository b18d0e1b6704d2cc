package amqpsem

import (
	"context"
	"errors"
	"time"
)

// WithSemaphore acquires n slots of s, runs fn with a context that is
// cancelled (with a cause wrapping ErrLost) if they are lost, and releases
// them when fn returns, whatever it returns. It returns Acquire's error
// without running fn, or fn's error joined with Release's.
func WithSemaphore(ctx context.Context, s *Semaphore, n int64, fn func(context.Context) error) error {
	u, err := s.Acquire(ctx, n)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-u.Lost():
			cancel(u.Err())
		case <-done:
		}
	}()
	ferr := fn(fctx)
	close(done)
	<-watched
	cancel(nil)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer rcancel()
	return errors.Join(ferr, u.Release(rctx))
}
