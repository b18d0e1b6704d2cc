package grpcsem

import (
	"context"

	"github.com/fairsem/semaphore/adaptive"
)

// Adaptive returns a Limiter that admits a call once l grants it a slot under
// its current limit (FIFO, in the wait list of l's semaphore), and ends the
// slot with the call's verdict: Success, TimedOut (DeadlineExceeded, judged
// by l as every timeout is), Dropped (the backend was overloaded:
// ResourceExhausted, Unavailable) or Ignore (cancelled, or the handler
// panicked), from which l learns its limit.
//
// l's deadline rule reads the call's deadline, WithTimeout as its wait
// budget and WithPriority as its Priority. Admit fails as l.Acquire does.
// Adaptive panics if l is nil.
func Adaptive(l *adaptive.Limiter) Limiter {
	if l == nil {
		panic("grpcsem: Adaptive(nil)")
	}
	return adaptiveLimiter{l}
}

type adaptiveLimiter struct{ l *adaptive.Limiter }

func (a adaptiveLimiter) Admit(ctx context.Context, _ Call) (Token, error) {
	c, err := a.l.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return callToken{c}, nil
}

// callToken ends its adaptive call with the call's outcome as the verdict.
type callToken struct{ c *adaptive.Call }

func (t callToken) Done(o adaptive.Verdict) { t.c.Done(o) }
