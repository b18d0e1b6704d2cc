package grpcsem

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/fairsem/semaphore/adaptive"
)

// An Option configures an interceptor.
type Option func(*config)

// config is fixed once the interceptor is built.
type config struct {
	timeout     time.Duration // longest wait for admission; 0: as long as the call's context
	code        codes.Code    // the overload code
	pushback    time.Duration // server: base of grpc-retry-pushback-ms; 0: none
	pushbackSet bool          // WithPushback was given
	client      bool          // a client interceptor: messages keep the limiter's error text
	noShed      bool          // WithoutDeadlineShedding

	priority func(context.Context, Call) adaptive.Priority // WithPriority; nil: the context's
}

// WithTimeout bounds how long a call waits to be admitted; past it the call
// fails with the overload code (and, on the server, the pushback trailer).
// Without it a call waits as long as its own context allows. It is also the
// call's wait budget for the deadline rule (see the package documentation):
// a call whose expected wait is longer is refused at once, unless
// WithoutDeadlineShedding. It panics if d <= 0: to refuse instead of waiting,
// bound the limiter's queue (the semaphore's WithMaxWaiters(0)).
func WithTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("grpcsem: WithTimeout(" + d.String() + "): the wait must be positive")
	}
	return func(c *config) { c.timeout = d }
}

// WithOverloadCode sets the code of calls refused for overload:
// codes.ResourceExhausted (the default) or codes.Unavailable. It panics for any
// other code.
func WithOverloadCode(code codes.Code) Option {
	if code != codes.ResourceExhausted && code != codes.Unavailable {
		panic("grpcsem: WithOverloadCode(" + code.String() + "): must be ResourceExhausted or Unavailable")
	}
	return func(c *config) { c.code = code }
}

// WithPushback sets the base of the grpc-retry-pushback-ms trailer that a
// server interceptor sends with an overload refusal (default 100ms): a grpc-go
// client whose retry policy covers the code retries after that long instead of
// its own backoff. The value sent is d scaled by a random factor between 0.8
// and 1.2, since grpc-go waits exactly the pushback and refused clients would
// otherwise come back together. 0 sends no trailer (the client's own backoff
// applies). It panics if d is negative; a client interceptor panics when given
// it.
func WithPushback(d time.Duration) Option {
	if d < 0 {
		panic("grpcsem: WithPushback(" + d.String() + "): negative duration")
	}
	return func(c *config) { c.pushback, c.pushbackSet = d, true }
}

// WithoutDeadlineShedding turns the deadline rule off for the calls through
// the interceptor (see the package documentation): the limiter is given no
// budget for a call, neither WithTimeout nor the call's deadline, so a call
// that finds the limit reached waits as long as they allow and is admitted
// however late, as before the rule. The levels' caps and an adaptive
// Limiter's explicit WithStandingQueue still apply.
func WithoutDeadlineShedding() Option { return func(c *config) { c.noShed = true } }

// WithPriority sets how critical a call is, from its context (its incoming
// metadata, metadata.FromIncomingContext, on a server) and Call: under
// overload a Sheddable call is refused first and a Critical one last (see
// adaptive.Priority). Without it a call has the Priority its context carries
// (adaptive.ContextWithPriority, from an interceptor before this one, or the
// caller on a client), Default if none. The Semaphore and Adaptive limiters
// apply it; Admission's controller has workload groups instead. It panics if
// f is nil; a call for which f returns a value that is not a Priority panics.
func WithPriority(f func(ctx context.Context, call Call) adaptive.Priority) Option {
	if f == nil {
		panic("grpcsem: WithPriority(nil)")
	}
	return func(c *config) { c.priority = f }
}

func newConfig(opts []Option, client bool) config {
	c := config{code: codes.ResourceExhausted, pushback: defaultPushback}
	for _, o := range opts {
		o(&c)
	}
	if client {
		if c.pushbackSet {
			panic("grpcsem: WithPushback applies to server interceptors, not client ones")
		}
		c.client, c.pushback = true, 0
	}
	return c
}

const defaultPushback = 100 * time.Millisecond

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
