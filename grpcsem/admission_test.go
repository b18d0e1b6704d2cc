package grpcsem_test

import (
	"context"
	"github.com/fairsem/semaphore/adaptive"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/grpcsem"
)

func TestAdmission_AdmitsUnderTheMethodWithTheEstimate(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 2, Memory: 100}, admission.WithName("calls"))
	lim := grpcsem.Admission(ctrl, func(_ context.Context, c grpcsem.Call) int64 { return int64(len(c.FullMethod)) })
	tok, err := lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/M"})
	require.NoError(t, err)
	st := ctrl.Stats()
	assert.Equal(t, admission.Resources{Count: 1, Memory: 4}, st.Held)
	tok.Done(adaptive.Success)
	assert.True(t, ctrl.Stats().Held.IsZero(), "released when the call ends")
	ctrl.Break(nil)
	require.NoError(t, ctrl.Drain(t.Context()))
}

func TestAdmission_NilMemoryIsZero(t *testing.T) {
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("calls"))
	tok, err := grpcsem.Admission(ctrl, nil).Admit(t.Context(), grpcsem.Call{FullMethod: "/s/M"})
	require.NoError(t, err)
	assert.Equal(t, admission.Resources{Count: 1}, ctrl.Stats().Held)
	tok.Done(adaptive.Ignore)
	ctrl.Break(nil)
	require.NoError(t, ctrl.Drain(t.Context()))
}

func TestAdmission_InvalidArgumentsPanic(t *testing.T) {
	assert.PanicsWithValue(t, "grpcsem: Admission(nil)", func() { grpcsem.Admission(nil, nil) })
	ctrl := admission.New(admission.Resources{Count: 1}, admission.WithName("calls"))
	lim := grpcsem.Admission(ctrl, func(context.Context, grpcsem.Call) int64 { return -5 })
	assert.PanicsWithValue(t, "grpcsem: memory estimate -5 for /s/M: negative",
		func() { _, _ = lim.Admit(t.Context(), grpcsem.Call{FullMethod: "/s/M"}) })
	assert.Zero(t, ctrl.Stats().CurrentPermits)
}
