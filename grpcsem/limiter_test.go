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

func TestVerdict_StringNamesIt(t *testing.T) {
	assert.Equal(t, "success", adaptive.Success.String())
	assert.Equal(t, "dropped", adaptive.Dropped.String())
	assert.Equal(t, "ignore", adaptive.Ignore.String())
	assert.Equal(t, "timed out", adaptive.TimedOut.String())
	assert.Equal(t, "Verdict(7)", adaptive.Verdict(7).String())
}

func TestTokenFrom_NilOutsideAnAdmittedCall(t *testing.T) {
	assert.Nil(t, grpcsem.TokenFrom(context.Background()))
	assert.Nil(t, grpcsem.UnitsFrom(context.Background()))
	assert.Nil(t, grpcsem.PermitFrom(context.Background()))
}

func TestPerTarget_SharesALimiterPerTargetAndPanicsOnNil(t *testing.T) {
	made := 0
	lim := grpcsem.PerTarget(func(string) grpcsem.Limiter {
		made++
		return grpcsem.Semaphore(semaphore.New(1), nil)
	})
	a, err := lim.Admit(t.Context(), grpcsem.Call{Target: "a"})
	require.NoError(t, err)
	_, err = lim.Admit(t.Context(), grpcsem.Call{Target: "b"})
	require.NoError(t, err, "another target has its own unit")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = lim.Admit(ctx, grpcsem.Call{Target: "a"})
	assert.ErrorIs(t, err, context.Canceled, "the same target waits for its unit")
	a.Done(adaptive.Success)
	assert.Equal(t, 2, made)

	assert.PanicsWithValue(t, "grpcsem: PerTarget(nil)", func() { grpcsem.PerTarget(nil) })
	bad := grpcsem.PerTarget(func(string) grpcsem.Limiter { return nil })
	assert.PanicsWithValue(t, "grpcsem: PerTarget: nil Limiter for target t", func() { _, _ = bad.Admit(t.Context(), grpcsem.Call{Target: "t"}) })
	assert.PanicsWithValue(t, "grpcsem: PerTarget: nil Limiter for target t", func() { _, _ = bad.Admit(t.Context(), grpcsem.Call{Target: "t"}) },
		"the lock was released by the first panic")
}
