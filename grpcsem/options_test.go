package grpcsem_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/grpcsem"
)

func TestOptions_InvalidValuesPanicNamingTheValue(t *testing.T) {
	assert.PanicsWithValue(t, "grpcsem: WithTimeout(0s): the wait must be positive", func() { grpcsem.WithTimeout(0) })
	assert.PanicsWithValue(t, "grpcsem: WithTimeout(-1s): the wait must be positive", func() { grpcsem.WithTimeout(-time.Second) })
	assert.PanicsWithValue(t, "grpcsem: WithPushback(-1ms): negative duration", func() { grpcsem.WithPushback(-time.Millisecond) })
	assert.PanicsWithValue(t, "grpcsem: WithOverloadCode(Internal): must be ResourceExhausted or Unavailable",
		func() { grpcsem.WithOverloadCode(codes.Internal) })
	assert.NotPanics(t, func() { grpcsem.WithPushback(0) })
	assert.NotPanics(t, func() { grpcsem.WithOverloadCode(codes.Unavailable) })
}

func TestOptions_PushbackOnAClientInterceptorPanics(t *testing.T) {
	lim := grpcsem.Semaphore(semaphore.New(1), nil)
	const msg = "grpcsem: WithPushback applies to server interceptors, not client ones"
	assert.PanicsWithValue(t, msg, func() { grpcsem.UnaryClientInterceptor(lim, grpcsem.WithPushback(time.Second)) })
	assert.PanicsWithValue(t, msg, func() { grpcsem.StreamClientInterceptor(lim, grpcsem.WithPushback(0)) })
	assert.NotPanics(t, func() { grpcsem.UnaryServerInterceptor(lim, grpcsem.WithPushback(time.Second)) })
}

func TestInterceptors_NilLimiterPanics(t *testing.T) {
	assert.PanicsWithValue(t, "grpcsem: UnaryServerInterceptor(nil)", func() { grpcsem.UnaryServerInterceptor(nil) })
	assert.PanicsWithValue(t, "grpcsem: StreamServerInterceptor(nil)", func() { grpcsem.StreamServerInterceptor(nil) })
	assert.PanicsWithValue(t, "grpcsem: UnaryClientInterceptor(nil)", func() { grpcsem.UnaryClientInterceptor(nil) })
	assert.PanicsWithValue(t, "grpcsem: StreamClientInterceptor(nil)", func() { grpcsem.StreamClientInterceptor(nil) })
}
