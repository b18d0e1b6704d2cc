package grpcsem_test

import (
	"context"
	"github.com/fairsem/semaphore/adaptive"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/grpcsem"
)

func TestSemaphore_TakesTheWeightAndGivesItBackOnDone(t *testing.T) {
	sem := semaphore.New(5, semaphore.WithHolderTracking())
	lim := grpcsem.Semaphore(sem, grpcsem.MethodWeights(map[string]int64{"/s/Heavy": 4, "/s/Free": 0}, 1))
	heavy, err := lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/Heavy"})
	require.NoError(t, err)
	light, err := lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/Other"})
	require.NoError(t, err)
	free, err := lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/Free"})
	require.NoError(t, err)
	assert.Zero(t, sem.Available())
	assert.Contains(t, sem.Diagnostics(0), "/s/Heavy", "holders are labelled with the method")
	heavy.Done(adaptive.Success)
	light.Done(adaptive.Dropped)
	free.Done(adaptive.Ignore)
	assert.Equal(t, sem.Capacity(), sem.Available())
}

func TestSemaphore_NilWeightIsOneUnit(t *testing.T) {
	sem := semaphore.New(2)
	tok, err := grpcsem.Semaphore(sem, nil).Admit(t.Context(), grpcsem.Call{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), sem.Available())
	tok.Done(adaptive.Success)
	assert.Equal(t, int64(2), sem.Available())
}

func TestSemaphore_FailedAdmitHoldsNothing(t *testing.T) {
	sem := semaphore.New(1, semaphore.WithMaxWaiters(0))
	lim := grpcsem.Semaphore(sem, func(context.Context, grpcsem.Call) int64 { return 2 })
	tok, err := lim.Admit(t.Context(), grpcsem.Call{})
	assert.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.Nil(t, tok)
	assert.Equal(t, int64(1), sem.Available())
}

func TestSemaphore_NegativeWeightsPanicNamingTheMethod(t *testing.T) {
	sem := semaphore.New(1, semaphore.WithName("s"))
	lim := grpcsem.Semaphore(sem, func(context.Context, grpcsem.Call) int64 { return -1 })
	msg := func() (msg any) {
		defer func() { msg = recover() }()
		_, _ = lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/M"})
		return nil
	}()
	require.IsType(t, "", msg)
	assert.Regexp(t, `^grpcsem: weight -1 for /s/M on semaphore "s" .*: negative$`, msg)
	assert.Equal(t, int64(1), sem.Available(), "the panic took nothing")
	assert.PanicsWithValue(t, "grpcsem: MethodWeights: weight -2 for /s/M: negative",
		func() { grpcsem.MethodWeights(map[string]int64{"/s/M": -2}, 1) })
	assert.PanicsWithValue(t, "grpcsem: MethodWeights: weight -1 for other methods: negative",
		func() { grpcsem.MethodWeights(nil, -1) })
	assert.PanicsWithValue(t, "grpcsem: Semaphore(nil)", func() { grpcsem.Semaphore(nil, nil) })
}

func TestMethodWeights_CopiesTheMap(t *testing.T) {
	m := map[string]int64{"/s/M": 3}
	w := grpcsem.MethodWeights(m, 1)
	m["/s/M"] = 9
	assert.Equal(t, int64(3), w(t.Context(), grpcsem.Call{FullMethod: "/s/M"}))
	assert.Equal(t, int64(1), w(t.Context(), grpcsem.Call{FullMethod: "/s/Other"}))
}
