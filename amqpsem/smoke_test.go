package amqpsem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	b := broker(t)
	ctx := testCtx(t, time.Minute)
	s := newSem(t, b.URL, testName(t), WithSlots(2))
	u, err := s.Acquire(ctx, 2)
	require.NoError(t, err)
	t.Log(u.Slots())
	got := make(chan error, 1)
	go func() {
		v, err := s.Acquire(ctx, 1)
		if err == nil {
			t.Log("second", v.Slots())
			err = v.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	t.Logf("%+v", st)
	require.NoError(t, u.Release(ctx))
	require.NoError(t, <-got)
}
