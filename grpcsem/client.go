package grpcsem

import (
	"context"
	"github.com/fairsem/semaphore/adaptive"
	"sync/atomic"

	"google.golang.org/grpc"
)

// UnaryClientInterceptor returns an interceptor that starts an outbound unary
// call only once l admits it, with the call's context, and ends the Token when
// the call returns: it bounds what this client sends a backend at once, so that
// it does not flood a struggling one. Bound per connection with a limiter given
// to one ClientConn's interceptors, per target with one shared by every
// ClientConn to the target or with PerTarget.
//
// A call that is not admitted fails with the status of the package
// documentation's table, whose message is the limiter's error; it is not sent.
// It panics if l is nil or WithPushback is given.
func UnaryClientInterceptor(l Limiter, opts ...Option) grpc.UnaryClientInterceptor {
	if l == nil {
		panic("grpcsem: UnaryClientInterceptor(nil)")
	}
	c := newConfig(opts, true)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		tok, err := c.admit(ctx, l, Call{FullMethod: method, Request: req, Target: target(cc)})
		if err != nil {
			st, _ := c.refusal(ctx, err)
			return st.Err()
		}
		o := adaptive.Ignore // stays so if a later interceptor panics
		defer func() { tok.Done(o) }()
		err = invoker(ctx, method, req, reply, cc, callOpts...)
		o = verdict(err)
		return err
	}
}

// StreamClientInterceptor returns an interceptor that opens an outbound
// stream only once l admits it, with the call's context, and ends the Token
// when gRPC finishes the stream: when a receive returns its status (io.EOF
// included) or an error, when the call's context ends, or when the ClientConn
// closes (gRPC's OnFinish call option, so interceptors chained after this one
// must pass the call options on). A stream that is never read to its end nor
// cancelled holds its units as long as gRPC holds the stream. It panics if l is
// nil or WithPushback is given.
func StreamClientInterceptor(l Limiter, opts ...Option) grpc.StreamClientInterceptor {
	if l == nil {
		panic("grpcsem: StreamClientInterceptor(nil)")
	}
	c := newConfig(opts, true)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		tok, err := c.admit(ctx, l, Call{FullMethod: method, Stream: true, Target: target(cc)})
		if err != nil {
			st, _ := c.refusal(ctx, err)
			return nil, st.Err()
		}
		f := &finisher{tok: tok}
		cs, err := f.open(ctx, desc, cc, method, streamer, callOpts)
		if err != nil {
			// gRPC may have called OnFinish, or failed before taking the option.
			f.finish(err)
			return nil, err
		}
		return cs, nil
	}
}

// finisher ends a client stream's Token once, from gRPC's OnFinish or from
// the interceptor when opening failed.
type finisher struct {
	tok  Token
	done atomic.Bool
}

func (f *finisher) finish(err error) {
	if f.done.CompareAndSwap(false, true) {
		f.tok.Done(verdict(err))
	}
}

// open opens the stream; a panic in a later interceptor ends the Token too.
func (f *finisher) open(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts []grpc.CallOption) (cs grpc.ClientStream, err error) {
	opened := false
	defer func() {
		if !opened {
			if f.done.CompareAndSwap(false, true) {
				f.tok.Done(adaptive.Ignore)
			}
		}
	}()
	cs, err = streamer(ctx, desc, cc, method, append(callOpts[:len(callOpts):len(callOpts)], grpc.OnFinish(f.finish))...)
	opened = true
	return cs, err
}

func target(cc *grpc.ClientConn) string {
	if cc == nil {
		return ""
	}
	return cc.Target()
}
