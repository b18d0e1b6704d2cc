package grpcsem

import (
	"context"
	"github.com/fairsem/semaphore/adaptive"

	"github.com/fairsem/semaphore/admission"
)

// Admission returns a Limiter that admits a call through ctrl, under the
// call's full method name as the operation and memory(ctx, call) bytes as its
// memory estimate (0 when memory is nil), with opts for every call, and
// releases the permit when the call ends. A server handler reaches the permit
// with PermitFrom, to consume memory or mark its CPU use.
//
// Admit fails as ctrl.Acquire does: the queue is bounded by ctrl's own bound,
// and ctrl may shed a call by itself. It panics if memory returns a negative
// number; Admission panics if ctrl is nil.
func Admission(ctrl *admission.Controller, memory func(ctx context.Context, call Call) int64, opts ...admission.PermitOption) Limiter {
	if ctrl == nil {
		panic("grpcsem: Admission(nil)")
	}
	return admLimiter{ctrl: ctrl, memory: memory, opts: opts}
}

type admLimiter struct {
	ctrl   *admission.Controller
	memory func(context.Context, Call) int64 // nil: 0 bytes
	opts   []admission.PermitOption
}

func (l admLimiter) Admit(ctx context.Context, call Call) (Token, error) {
	var mem int64
	if l.memory != nil {
		if mem = l.memory(ctx, call); mem < 0 {
			panic("grpcsem: memory estimate " + itoa(mem) + " for " + call.FullMethod + ": negative")
		}
	}
	p, err := l.ctrl.Acquire(ctx, call.FullMethod, mem, l.opts...)
	if err != nil {
		return nil, err
	}
	return permitToken{p}, nil
}

// permitToken releases its permit when the call ends.
type permitToken struct{ p *admission.Permit }

func (t permitToken) Done(adaptive.Verdict) { t.p.Release() }

// PermitFrom returns the admission permit of the call whose context ctx is,
// when it was admitted by an Admission limiter (or one wrapping it, see
// Token), or nil. The permit is released when the call ends; the handler must
// not keep it.
func PermitFrom(ctx context.Context) *admission.Permit {
	t, _ := tokenAs[permitToken](TokenFrom(ctx))
	return t.p
}
