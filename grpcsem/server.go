package grpcsem

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/internal/shed"
)

// UnaryServerInterceptor returns an interceptor that runs a unary handler only
// once l admits the call (Call.Request is the request), and ends the call's
// Token when the handler returns, also when it panics (the panic goes on).
// The handler finds the Token in its context (TokenFrom, UnitsFrom,
// PermitFrom).
//
// A call that is not admitted gets a status error at once, never a hang:
// Canceled or DeadlineExceeded when its own context ended; the overload code
// with the pushback trailer when the queue is full, the call was shed or
// WithTimeout passed; ResourceExhausted with pushback -1 when it is heavier
// than the capacity; the overload code without pushback when the limiter is
// broken. The wait is bounded by the call's context (its deadline, the client
// cancelling) and WithTimeout. It panics if l is nil or an option applies only
// to client interceptors.
func UnaryServerInterceptor(l Limiter, opts ...Option) grpc.UnaryServerInterceptor {
	if l == nil {
		panic("grpcsem: UnaryServerInterceptor(nil)")
	}
	c := newConfig(opts, false)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		tok, err := c.admit(ctx, l, Call{FullMethod: info.FullMethod, Request: req})
		if err != nil {
			st, pushback := c.refusal(ctx, err)
			if pushback != "" {
				// Fails only outside a gRPC server (no stream in ctx): nothing to tell.
				_ = grpc.SetTrailer(ctx, pushbackTrailer(pushback))
			}
			return nil, st.Err()
		}
		o := adaptive.Ignore // stays so if the handler panics
		defer func() { tok.Done(o) }()
		resp, err := handler(withToken(ctx, tok), req)
		o = verdict(err)
		return resp, err
	}
}

// StreamServerInterceptor returns an interceptor that runs a stream handler
// only once l admits the call (Call.Stream is true, Call.Request nil: the
// first message has not been read), and ends the call's Token when the handler
// returns: the stream holds its units or permit until it ends, whether it ends
// normally, with an error, because the client cancelled (the handler's context
// ends; the handler must return), or because the handler panicked (the panic
// goes on). The handler finds the Token in its stream's context.
//
// Refusals are as for UnaryServerInterceptor. It panics if l is nil or an
// option applies only to client interceptors.
func StreamServerInterceptor(l Limiter, opts ...Option) grpc.StreamServerInterceptor {
	if l == nil {
		panic("grpcsem: StreamServerInterceptor(nil)")
	}
	c := newConfig(opts, false)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		tok, err := c.admit(ctx, l, Call{FullMethod: info.FullMethod, Stream: true})
		if err != nil {
			st, pushback := c.refusal(ctx, err)
			if pushback != "" {
				ss.SetTrailer(pushbackTrailer(pushback))
			}
			return st.Err()
		}
		o := adaptive.Ignore // stays so if the handler panics
		defer func() { tok.Done(o) }()
		err = handler(srv, admittedStream{ss, withToken(ctx, tok)})
		o = verdict(err)
		return err
	}
}

// admittedStream is the handler's stream: its context carries the Token.
type admittedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s admittedStream) Context() context.Context { return s.ctx }

// admit asks l to admit call, waiting at most WithTimeout, with the call's
// Priority and budget in the context for the limiter's deadline rule: the
// call's own deadline, and WithTimeout as its wait budget (none at all with
// WithoutDeadlineShedding). The timeout is also a context deadline, so that
// any limiter sees it: the semaphore counts the wait as timed out. A deadline
// can only refuse a call that is admitted at once if it has already passed,
// which a positive timeout does not within the microseconds to the limiter.
func (c *config) admit(ctx context.Context, l Limiter, call Call) (Token, error) {
	if c.priority != nil {
		p := c.priority(ctx, call)
		if p > adaptive.Sheddable {
			panic("grpcsem: priority " + p.String() + " for " + call.FullMethod + ": not a Priority")
		}
		ctx = adaptive.ContextWithPriority(ctx, p)
	}
	switch {
	case c.noShed:
		ctx = shed.WithBudget(ctx, shed.Budget{})
	case c.timeout > 0:
		var b shed.Budget
		b.Deadline, _ = ctx.Deadline()
		b.WaitUntil = time.Now().Add(c.timeout)
		ctx = shed.WithBudget(ctx, b)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	return l.Admit(ctx, call)
}
