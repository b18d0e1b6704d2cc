package semaphore

import "context"

// WithSemaphore acquires n units of s under the rules of Acquire, runs fn, and
// releases the units on every path: when fn returns, and when it panics (the units
// are released, then the panic continues). It returns fn's error. When the acquire
// fails, fn is not called and the acquire error is returned.
func WithSemaphore(ctx context.Context, s *Semaphore, n int64, fn func(context.Context) error) error {
	if err := s.Acquire(ctx, n); err != nil {
		return err
	}
	if s.diag != nil {
		defer s.trackedUnits(ctx, n, 1).Release()
		return fn(ctx)
	}
	defer s.Release(n)
	return fn(ctx)
}

// WithSemaphoreValue is WithSemaphore for a function that returns a value. When the
// acquire fails, fn is not called and the zero T is returned with the acquire error.
func WithSemaphoreValue[T any](ctx context.Context, s *Semaphore, n int64, fn func(context.Context) (T, error)) (T, error) {
	if err := s.Acquire(ctx, n); err != nil {
		var zero T
		return zero, err
	}
	if s.diag != nil {
		defer s.trackedUnits(ctx, n, 1).Release()
		return fn(ctx)
	}
	defer s.Release(n)
	return fn(ctx)
}
