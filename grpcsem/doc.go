// Package grpcsem is gRPC interceptors that bound the calls a server works on
// at once, and the calls a client sends a backend at once, with a bounded
// backlog, a wait timeout and a status a retrying client understands instead of
// a hang.
//
//	sem := semaphore.New(64, semaphore.WithMaxWaiters(256)) // 64 in flight, 256 waiting
//	lim := grpcsem.Semaphore(sem, nil)                      // one unit a call
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpcsem.UnaryServerInterceptor(lim, grpcsem.WithTimeout(time.Second))),
//		grpc.ChainStreamInterceptor(grpcsem.StreamServerInterceptor(lim)))
//
// Every interceptor asks a Limiter to admit the call and holds the Token it
// gets until the call ends. Semaphore takes units of a core Semaphore (one a
// call, or a weight per method with MethodWeights, or from any function of the
// request and the metadata in the context); Admission admits through an
// admission.Controller, under the full method name, with a memory estimate.
// A call waits in the semaphore's or controller's FIFO queue until it is
// admitted, its context ends, WithTimeout passes, or the queue refuses it;
// whatever happens, it gets an answer.
//
// # Server
//
// UnaryServerInterceptor and StreamServerInterceptor run the handler once the
// call is admitted and end its Token when the handler returns, on every path:
// a normal end, an error, a client that cancelled (the handler's context ends
// and it returns), a panic (the Token ends, then the panic goes on, to a
// recovery interceptor chained before this one, or to the process). A stream
// holds its Token for its whole life, from before its first message to the
// handler's return. The handler reaches what it holds from its context:
// UnitsFrom, PermitFrom, or TokenFrom for any Limiter.
//
// # Statuses
//
// One table maps what Admit returned to the call's status and to the
// grpc-retry-pushback-ms trailer (PushbackKey). The row is chosen by how the
// limiter said the call ended, its semaphore.Outcome (semaphore.OutcomeOf),
// never by the sentinels the error matches: a context cancelled with a cause
// matching ErrQueueFull is still a cancelled call. "the overload code" is
// codes.ResourceExhausted, or codes.Unavailable with WithOverloadCode;
// "pushback" is WithPushback's duration (100ms by default), jittered by ±20%.
//
//	what Admit returned                                       code                    pushback trailer
//	any error, once the call's own context has ended          Canceled or             none
//	  (the client cancelled, or its deadline passed)            DeadlineExceeded
//	TooLarge (it could never fit)                             ResourceExhausted       -1: do not retry
//	Broken (a semaphore or controller broken)                 the overload code       none: the client's backoff
//	Shed, QueueFull                                           the overload code       pushback
//	TimedOut (WithTimeout passed)                             the overload code       pushback
//	an error with no Outcome carrying a gRPC status           that status             none
//	any other error                                           Unknown                 none
//
// Errors that end no admission (admission's ErrMemoryLimit, ErrEvicted and
// ErrReleased, the semaphore's ErrInsufficientUnits and ErrDifferentSemaphore)
// fall in the last row if a custom Limiter returns them.
//
// A grpc-go client whose retry policy lists the code retries after the pushback
// instead of its own backoff, never when it is negative; without a retry
// policy the caller just sees the status. The trailer is sent on the server only;
// a server's status message is the reason alone ("grpcsem: overloaded: wait
// queue full"), since the limiter's error names the semaphore or controller,
// which stays on the server. A client interceptor's refusals use the same codes
// with the limiter's whole error as the message, and send nothing.
//
// # Client
//
// UnaryClientInterceptor and StreamClientInterceptor admit an outbound call
// with its context before it is sent, FIFO and weighted as on the server: the
// Seastar accept loop's mirror, so that a client does not flood a struggling
// backend. The limiter given to one ClientConn's interceptors bounds that
// connection; one shared by the ClientConns of a target bounds the target, and
// PerTarget gives each target its own when one interceptor serves every
// connection. A client stream holds its Token until gRPC finishes it (its
// status received, its context ended, or the ClientConn closed). A call holds
// its Token across the attempts of gRPC's retry policy, pushback waits
// included: it is one call to the limiter, though each attempt is a new call
// to the server.
//
// # Never served too late
//
// The Semaphore and Adaptive limiters apply the module's deadline rule by
// default (see package adaptive): a call that finds the limit reached is
// refused at once, with the overload code and the pushback trailer (the Shed
// row), when its expected wait (the units ahead of it and its own, at the rate
// the units in flight come back per usual round trip, which the limiter
// measures) is longer than WithTimeout, or than the call's deadline less the
// usual round trip; one admitted waits at most that long. A queue that stands
// (nobody found it empty for 100ms) is drained: a call with a timeout or a
// deadline then waits at most 5ms. Before a round trip is measured, nobody is
// refused on the expected wait. The interceptors hand the limiter the call's
// deadline and WithTimeout as its wait budget; Admission's controller reads
// them for admission's own rule. WithoutDeadlineShedding hands it no budget:
// a call waits as long as WithTimeout and its deadline allow and is admitted
// however late, as before the rule.
//
// WithPriority says how critical a call is (adaptive.Critical, Default,
// Sheddable), from its context and metadata; without it, its context says
// (adaptive.ContextWithPriority). Under overload sheddable calls are refused
// first, critical ones last; admitted calls are granted in arrival order
// whatever their priority. A floor (adaptive.WithFloor) is set on an adaptive
// Limiter, behind Adaptive.
//
// # Verdicts, and the adaptive limiter
//
// A Token ends with the call's verdict, an adaptive.Verdict, for limiters
// that learn from it: nil is Success, and so is an application's error;
// DeadlineExceeded is TimedOut (which the adaptive limiter judges as it
// judges every timeout, see adaptive.TimedOut); ResourceExhausted and
// Unavailable are Dropped; Canceled and a panic are Ignore. Semaphore and
// Admission ignore it.
//
// Adaptive(l) admits through an adaptive limiter (package adaptive), the
// third adapter: the call's verdict goes to the limiter, from which it
// learns its limit, and its refusals carry an Outcome like the others', so
// the table above applies unchanged.
//
// # Details
//
//   - One Limiter interface serves every interceptor, server and client: the
//     semaphore, the admission controller and the adaptive limiter differ only
//     in their adapter. Admit returns a Token, which gives the concurrency back.
//   - A refusal says when to retry (the pushback trailer), or that a retry is
//     futile (-1, for a call heavier than the capacity).
//   - The pushback is jittered: grpc-go waits exactly the pushback, so clients
//     refused together would otherwise return together.
//   - Broken and closed use the overload code without pushback (httpsem's 503
//     without Retry-After): a server that is going away lets the client back off
//     by itself, through its balancer, perhaps to another backend.
//   - WithTimeout is a context deadline on the wait, so that the semaphore
//     counts the call as timed out, and the call's wait budget for the
//     deadline rule, handed to the limiter beside the call's own deadline. httpsem tries first and then waits with a cancel timer, so that
//     its timeout cannot refuse a request that needs no wait; here a positive
//     timeout cannot either, since the call reaches the limiter well before it
//     passes. The deadline's timer and the budget handed to the limiter cost
//     a few allocations a call (BenchmarkUnaryServerInterceptor), a small
//     share of a unary call over bufconn (BenchmarkUnaryCall).
//   - A client stream whose opening fails (a later interceptor refuses it
//     without calling the streamer, or gRPC fails it) gives its Token back at
//     once: gRPC never finishes a stream it did not open.
//   - A stream is admitted before its handler runs, so its weight cannot depend
//     on its first message: Call.Request is nil, and a weight function reads
//     the method or the metadata (metadata.FromIncomingContext).
//   - A server's refusal messages give the reason only (as httpsem's bodies
//     give the status text only); a client's give the whole error.
//   - A handler's panic is not recovered: the Token ends and the panic goes on,
//     as grpc-go has no recovery of its own; chain a recovery interceptor
//     before this one to turn it into a status.
//   - The semaphore's units are labelled with the method (ContextWithHolderLabel), so
//     that Diagnostics groups the holders by method.
//   - PerTarget keeps one limiter per target for its whole life: targets are a
//     configured set of backends. A ClientConn is one target, so "per
//     connection" means per ClientConn; an interceptor cannot see the
//     ClientConn's subchannels.
//   - Options that do not apply panic (WithPushback on a client), as do invalid
//     values, as in httpsem: a programmer error is reported at construction.
package grpcsem
