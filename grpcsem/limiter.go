package grpcsem

import (
	"context"
	"github.com/fairsem/semaphore/adaptive"
	"sync"
)

// A Limiter decides when a call may start. The interceptors ask it once per
// call, before the handler (server) or the call (client) runs, and give the
// Token back when the call ends. Semaphore, Admission and PerTarget make one;
// any other limiter plugs in by implementing Admit (see the package
// documentation for the adaptive limiter).
type Limiter interface {
	// Admit waits until call may start and returns the Token it holds until it
	// ends, or fails. It must give up when ctx ends (the call's context, ended
	// early by WithTimeout) and must not hold anything when it fails. The
	// error decides the call's status (see the package documentation), so it
	// should wrap the semaphore package's sentinels where they apply.
	Admit(ctx context.Context, call Call) (Token, error)
}

// A Token is what an admitted call holds. Done is called exactly once, when
// the call ends, with the call's outcome (see the package documentation); it
// gives back what Admit took.
//
// A Limiter that wraps another (to count or log) and returns its own Token
// around the inner one should give that Token an Unwrap() Token method, so
// that UnitsFrom and PermitFrom still find what the inner Token holds.
type Token interface {
	Done(adaptive.Verdict)
}

// tokenAs returns the first Token of type T in tok's chain of Unwrap methods.
func tokenAs[T Token](tok Token) (T, bool) {
	for tok != nil {
		if t, ok := tok.(T); ok {
			return t, true
		}
		u, ok := tok.(interface{ Unwrap() Token })
		if !ok {
			break
		}
		tok = u.Unwrap()
	}
	var zero T
	return zero, false
}

// Call describes a call being admitted.
type Call struct {
	FullMethod string // "/package.Service/Method"
	Request    any    // the request message of a unary call; nil for a stream
	Stream     bool   // a streaming call
	Target     string // client side: the ClientConn's target; "" on the server
}

type tokenKey struct{}

// TokenFrom returns the Token of the call whose context ctx is, as the server
// interceptors give it to the handler, or nil. UnitsFrom and PermitFrom give
// the units or the permit behind it.
func TokenFrom(ctx context.Context) Token {
	t, _ := ctx.Value(tokenKey{}).(Token)
	return t
}

func withToken(ctx context.Context, t Token) context.Context {
	return context.WithValue(ctx, tokenKey{}, t)
}

// PerTarget returns a Limiter that gives each client target its own Limiter,
// made by newLimiter on the target's first call (Call.Target, the
// ClientConn's target), so that one interceptor installed on every connection
// bounds each backend separately. A target's Limiter is kept for the life of
// the returned one: the targets are expected to be the configured set of
// backends, not an unbounded stream of names. PerTarget panics if newLimiter
// is nil; Admit panics if newLimiter returns nil.
func PerTarget(newLimiter func(target string) Limiter) Limiter {
	if newLimiter == nil {
		panic("grpcsem: PerTarget(nil)")
	}
	return &perTarget{newLimiter: newLimiter, limiters: make(map[string]Limiter)}
}

type perTarget struct {
	newLimiter func(string) Limiter // fixed after PerTarget

	mu       sync.Mutex
	limiters map[string]Limiter // guarded by mu; one per target seen, never removed
}

func (p *perTarget) Admit(ctx context.Context, call Call) (Token, error) {
	p.mu.Lock()
	l, ok := p.limiters[call.Target]
	if !ok {
		// Made under the lock, so that two first calls to a target share one.
		if l = p.newLimiter(call.Target); l == nil {
			p.mu.Unlock()
			panic("grpcsem: PerTarget: nil Limiter for target " + call.Target)
		}
		p.limiters[call.Target] = l
	}
	p.mu.Unlock()
	return l.Admit(ctx, call)
}
