package adaptive_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
)

func TestCall_ReleaseIsIdempotentAndDoneAfterEndPanics(t *testing.T) {
	sem := semaphore.New(2)
	l := adaptive.New(sem, &script{limit: 2})
	c, err := l.Acquire(context.Background())
	require.NoError(t, err)
	c.Done(adaptive.Success)
	c.Release()
	c.Release()
	assert.Equal(t, int64(2), sem.Available())
	assert.PanicsWithValue(t, "adaptive: Call.Done(dropped) after the call ended", func() { c.Done(adaptive.Dropped) })
	var none *adaptive.Call
	none.Release()
	c, _ = l.Acquire(context.Background())
	assert.Panics(t, func() { c.Done(adaptive.Verdict(9)) })
	c.Release()
	assert.Equal(t, "Verdict(9)", adaptive.Verdict(9).String())
}
