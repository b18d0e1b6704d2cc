package semaphore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
)

// WithSemaphore holds the units exactly while fn runs and releases them on every path.

func TestWithSemaphore_ReleasesOnReturnAndError(t *testing.T) {
	s := semaphore.New(2)
	err := semaphore.WithSemaphore(context.Background(), s, 2, func(context.Context) error {
		assert.Equal(t, int64(0), s.Available(), "fn runs holding the units")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.Available())

	boom := errors.New("boom")
	err = semaphore.WithSemaphore(context.Background(), s, 1, func(context.Context) error { return boom })
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, int64(2), s.Available())
}

func TestWithSemaphore_ReleasesThenPropagatesAPanic(t *testing.T) {
	s := semaphore.New(1)
	assert.PanicsWithValue(t, "in fn", func() {
		_ = semaphore.WithSemaphore(context.Background(), s, 1, func(context.Context) error { panic("in fn") })
	})
	assert.Equal(t, int64(1), s.Available())
	assert.PanicsWithValue(t, "in fn", func() {
		_, _ = semaphore.WithSemaphoreValue(context.Background(), s, 1, func(context.Context) (int, error) { panic("in fn") })
	})
	assert.Equal(t, int64(1), s.Available())
}

func TestWithSemaphore_DoesNotCallFnWhenTheAcquireFails(t *testing.T) {
	s := semaphore.New(1)
	called := false
	err := semaphore.WithSemaphore(context.Background(), s, 2, func(context.Context) error { called = true; return nil })
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	v, err := semaphore.WithSemaphoreValue(context.Background(), s, 2, func(context.Context) (string, error) {
		called = true
		return "x", nil
	})
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.Equal(t, "", v)
	assert.False(t, called)
}

func TestWithSemaphoreValue_ReturnsFnsResult(t *testing.T) {
	s := semaphore.New(3)
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "carried")
	v, err := semaphore.WithSemaphoreValue(ctx, s, 3, func(ctx context.Context) (string, error) {
		return ctx.Value(key{}).(string), nil
	})
	require.NoError(t, err)
	assert.Equal(t, "carried", v, "fn receives the caller's context")
	assert.Equal(t, int64(3), s.Available())
}
