package grpcsem_test

import (
	"context"
	"github.com/fairsem/semaphore/adaptive"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/grpcsem"
)

// modelCall is one call, in the interceptors and in the model.
type modelCall struct {
	weight   int64
	stream   bool
	client   bool // through the client interceptors
	cancel   context.CancelFunc
	started  chan struct{} // closed when the handler runs
	finish   chan string   // "ok", "error" or "panic": how the handler ends
	done     chan struct{} // closed when the interceptor has returned
	deadline time.Time     // end of its wait (WithTimeout)

	// Set by the call's goroutine before done closes, or by the token
	// (outcome) before the interceptor returns.
	err      error
	panicked bool
	trailer  metadata.MD
	outcome  adaptive.Verdict
	outcomes int // how many times the token was ended
	units    int64

	// The model's expectations.
	state    string // "waiting", "running", "done"
	code     codes.Code
	pushback string // "": none; "jitter": one value around 100ms; else exactly this
	want     adaptive.Verdict
	admitted bool
}

// FuzzInterceptorModel drives the four interceptors, server and client, unary
// and stream, on one semaphore in a synctest bubble (interceptors called
// directly, time faked) with a sequence of calls of various weights (too large
// included), handlers (server) or calls (client) ending normally, with an
// error, or by panicking, clients giving up while waiting or running, time
// passing beyond the wait timeout, and Break, and requires after each step,
// once every goroutine is blocked, what a sequential model predicts: which
// calls run (strict FIFO over the capacity, a backlog of at most 2), the units
// each server handler holds, each refused call's code and pushback trailer
// (none on a client), the outcome each token ended with (exactly once), and
// the units left. A client stream runs from its opening until gRPC reports its
// end through the OnFinish call option, which the fake streamer keeps. The
// deadline rule is off here (WithoutDeadlineShedding): FuzzDeadlineRuleModel
// (package adaptive) is its model, and rule_test.go checks the interceptors
// apply it.
func FuzzInterceptorModel(f *testing.F) {
	f.Add([]byte{2, 0, 1, 1, 2, 0, 1, 2, 0, 3, 0, 4, 0, 2, 5})
	f.Add([]byte{1, 0, 0, 1, 0, 0, 0, 4, 0, 2, 1, 3, 1, 5, 0, 0, 1})
	f.Add([]byte{3, 1, 3, 0, 1, 2, 2, 3, 0, 2, 4, 0, 0, 5, 3, 2, 0})
	f.Add([]byte{2, 0, 17, 1, 17, 0, 18, 1, 16, 2, 0, 3, 1, 2, 1, 4, 0, 2, 2, 0, 19, 5, 0})
	f.Add([]byte{1, 1, 17, 0, 16, 1, 49, 3, 1, 2, 2, 4, 0, 4, 0, 0, 17, 2, 0, 5, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		capacity := int64(ops[0]%3) + 1
		ops = ops[1:]
		if len(ops) > 60 {
			ops = ops[:60]
		}
		const backlog, timeout = 2, 10 * time.Second
		synctest.Test(t, func(t *testing.T) {
			sem := semaphore.New(capacity, semaphore.WithMaxWaiters(backlog))
			lim := recordingLimiter{grpcsem.Semaphore(sem, func(ctx context.Context, _ grpcsem.Call) int64 {
				return modelOf(ctx).weight
			})}
			ics := interceptors{
				unary:        grpcsem.UnaryServerInterceptor(lim, grpcsem.WithTimeout(timeout), grpcsem.WithoutDeadlineShedding()),
				stream:       grpcsem.StreamServerInterceptor(lim, grpcsem.WithTimeout(timeout), grpcsem.WithoutDeadlineShedding()),
				clientUnary:  grpcsem.UnaryClientInterceptor(lim, grpcsem.WithTimeout(timeout), grpcsem.WithoutDeadlineShedding()),
				clientStream: grpcsem.StreamClientInterceptor(lim, grpcsem.WithTimeout(timeout), grpcsem.WithoutDeadlineShedding()),
			}
			var calls []*modelCall
			free, broken := capacity, false

			withState := func(state string) []*modelCall {
				var cs []*modelCall
				for _, m := range calls {
					if m.state == state {
						cs = append(cs, m)
					}
				}
				return cs
			}
			refuse := func(m *modelCall, code codes.Code, pushback string) {
				m.state, m.code, m.pushback = "done", code, pushback
			}
			run := func(m *modelCall) {
				free -= m.weight
				m.state, m.admitted = "running", true
			}
			grant := func() {
				for _, m := range withState("waiting") {
					if m.weight > free {
						return
					}
					run(m)
				}
			}
			end := func(m *modelCall, code codes.Code, want adaptive.Verdict) {
				m.state, m.code, m.want = "done", code, want
				if !broken {
					free += m.weight
					grant()
				}
			}
			check := func(step int) {
				synctest.Wait()
				for i, m := range calls {
					msg := "step " + strconv.Itoa(step) + ": call " + strconv.Itoa(i) + " (weight " + strconv.FormatInt(m.weight, 10) + ", " + m.state + ")"
					require.Equal(t, m.state != "waiting", closed(m.started) || closed(m.done), msg)
					if closed(m.started) && !m.client {
						require.Equal(t, m.weight, m.units, msg+": units in the handler's context")
					}
					if m.state != "done" {
						continue
					}
					require.True(t, closed(m.done), msg+": not answered")
					if m.code == codes.Internal {
						require.True(t, m.panicked, msg+": the panic goes on")
					} else {
						require.Equal(t, m.code, status.Code(m.err), msg+": %v", m.err)
					}
					got := m.trailer.Get(grpcsem.PushbackKey)
					switch m.pushback {
					case "":
						require.Empty(t, got, msg)
					case "jitter":
						require.Len(t, got, 1, msg)
						ms, err := strconv.Atoi(got[0])
						require.NoError(t, err, msg)
						require.True(t, ms >= 80 && ms < 120, msg+": pushback %dms", ms)
					default:
						require.Equal(t, []string{m.pushback}, got, msg)
					}
					if m.admitted {
						require.Equal(t, 1, m.outcomes, msg+": token ended once")
						require.Equal(t, m.want, m.outcome, msg)
					} else {
						require.Zero(t, m.outcomes, msg+": no token")
					}
				}
				require.Equal(t, len(withState("waiting")), sem.Waiters(), "step %d: waiters", step)
				if !broken {
					require.Equal(t, free, sem.Available(), "step %d: units", step)
				}
			}

			for step := 0; step+1 < len(ops); step += 2 {
				arg := int(ops[step+1])
				switch ops[step] % 6 {
				case 0, 1: // a new unary call or stream
					time.Sleep(time.Millisecond) // distinct deadlines: timeouts fire one at a time
					ctx, cancel := context.WithCancel(t.Context())
					m := &modelCall{weight: int64(arg) % (capacity + 2), stream: ops[step]%6 == 1, client: arg&16 != 0, cancel: cancel,
						started: make(chan struct{}), finish: make(chan string, 1), done: make(chan struct{}),
						deadline: time.Now().Add(timeout)}
					calls = append(calls, m)
					go m.serve(context.WithValue(ctx, modelKey{}, m), ics)
					pushback := func(p string) string {
						if m.client {
							return "" // a client sends no trailer
						}
						return p
					}
					switch {
					case broken:
						refuse(m, codes.ResourceExhausted, "")
					case m.weight > capacity:
						refuse(m, codes.ResourceExhausted, pushback("-1"))
					case len(withState("waiting")) == 0 && m.weight <= free:
						run(m)
					case len(withState("waiting")) >= backlog:
						refuse(m, codes.ResourceExhausted, pushback("jitter"))
					default:
						m.state = "waiting"
					}
				case 2: // a handler ends: normally, with an error, or by panicking
					running := withState("running")
					if len(running) == 0 {
						continue
					}
					m := running[arg%len(running)]
					switch how := []string{"ok", "error", "panic"}[arg%3]; how {
					case "ok":
						m.finish <- how
						end(m, codes.OK, adaptive.Success)
					case "error":
						m.finish <- how
						end(m, codes.Unavailable, adaptive.Dropped)
					case "panic":
						m.finish <- how
						if m.client && m.stream {
							end(m, codes.OK, adaptive.Success) // read to io.EOF: see finishStream
						} else {
							end(m, codes.Internal, adaptive.Ignore)
						}
					}
				case 3: // a client gives up, waiting or running
					live := append(withState("waiting"), withState("running")...)
					if len(live) == 0 {
						continue
					}
					m := live[arg%len(live)]
					m.cancel()
					if m.state == "waiting" {
						refuse(m, codes.Canceled, "")
						grant()
					} else {
						end(m, codes.Canceled, adaptive.Ignore)
					}
				case 4: // time passes: waits past the timeout end, oldest first
					time.Sleep(4 * time.Second)
					for _, m := range withState("waiting") {
						if m.state == "waiting" && !m.deadline.After(time.Now()) {
							refuse(m, codes.ResourceExhausted, map[bool]string{false: "jitter", true: ""}[m.client])
							grant()
						}
					}
				case 5: // Break
					if arg%3 != 0 {
						continue
					}
					sem.Break(nil)
					broken = true
					for _, m := range withState("waiting") {
						refuse(m, codes.ResourceExhausted, "")
					}
				}
				check(step)
			}
			// Wind down: every client gives up; every handler returns.
			for _, m := range calls {
				m.cancel()
			}
			synctest.Wait()
			if !broken {
				require.Equal(t, capacity, sem.Available(), "every unit back")
			}
		})
	})
}

// interceptors are the four under test.
type interceptors struct {
	unary        grpc.UnaryServerInterceptor
	stream       grpc.StreamServerInterceptor
	clientUnary  grpc.UnaryClientInterceptor
	clientStream grpc.StreamClientInterceptor
}

// serve runs the call through its interceptor, as gRPC would, and records
// what the client would see.
func (m *modelCall) serve(ctx context.Context, ics interceptors) {
	defer close(m.done)
	defer func() {
		if r := recover(); r != nil {
			m.panicked = true
		}
	}()
	unary, stream := ics.unary, ics.stream
	switch {
	case m.client && m.stream:
		var onFinish func(error)
		streamer := func(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			for _, o := range opts {
				if f, ok := o.(grpc.OnFinishCallOption); ok {
					onFinish = f.OnFinish
				}
			}
			close(m.started)
			return nil, nil
		}
		if _, m.err = ics.clientStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, nil, "/model/Stream", streamer); m.err != nil {
			return
		}
		m.err = m.finishStream(ctx)
		onFinish(m.err)
		return
	case m.client:
		m.err = ics.clientUnary(ctx, "/model/Unary", m, nil, nil,
			func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				close(m.started)
				return m.end(ctx)
			})
		return
	}
	if m.stream {
		ss := &fakeServerStream{ctx: ctx}
		m.err = stream(nil, ss, &grpc.StreamServerInfo{FullMethod: "/model/Stream", IsServerStream: true},
			func(_ any, ss grpc.ServerStream) error { return m.handle(ss.Context()) })
		m.trailer = ss.trailer
		return
	}
	sts := &fakeTransportStream{}
	_, m.err = unary(grpc.NewContextWithServerTransportStream(ctx, sts), m, &grpc.UnaryServerInfo{FullMethod: "/model/Unary"},
		func(ctx context.Context, _ any) (any, error) { return nil, m.handle(ctx) })
	m.trailer = sts.trailer
}

// handle is the handler: it notes its units, then ends as it is told, or when
// the client gives up.
func (m *modelCall) handle(ctx context.Context) error {
	m.units = grpcsem.UnitsFrom(ctx).Count()
	close(m.started)
	return m.end(ctx)
}

// finishStream is how gRPC ends an open client stream: with the status the
// stream ends with (nil for io.EOF, also when told to "panic": an open
// client stream has no code of the caller's running to panic), or the
// context's.
func (m *modelCall) finishStream(ctx context.Context) error {
	select {
	case how := <-m.finish:
		if how == "error" {
			return status.Error(codes.Unavailable, "backend down")
		}
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// end ends a running handler or client call as it is told, or when the client
// gives up.
func (m *modelCall) end(ctx context.Context) error {
	select {
	case how := <-m.finish:
		switch how {
		case "error":
			return status.Error(codes.Unavailable, "backend down")
		case "panic":
			panic("handler panic")
		}
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

type modelKey struct{}

func modelOf(ctx context.Context) *modelCall { return ctx.Value(modelKey{}).(*modelCall) }

// recordingLimiter notes on each call's model the outcome its token ended with.
type recordingLimiter struct{ grpcsem.Limiter }

func (l recordingLimiter) Admit(ctx context.Context, call grpcsem.Call) (grpcsem.Token, error) {
	tok, err := l.Limiter.Admit(ctx, call)
	if err != nil {
		return nil, err
	}
	return recordingToken{tok, modelOf(ctx)}, nil
}

type recordingToken struct {
	grpcsem.Token
	m *modelCall
}

func (t recordingToken) Unwrap() grpcsem.Token { return t.Token }

func (t recordingToken) Done(o adaptive.Verdict) {
	t.m.outcome = o
	t.m.outcomes++
	t.Token.Done(o)
}

// fakeTransportStream is the server transport stream of a unary call: it
// records the trailer.
type fakeTransportStream struct {
	mu      sync.Mutex
	trailer metadata.MD
}

func (s *fakeTransportStream) Method() string               { return "/model/Unary" }
func (s *fakeTransportStream) SetHeader(metadata.MD) error  { return nil }
func (s *fakeTransportStream) SendHeader(metadata.MD) error { return nil }
func (s *fakeTransportStream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// fakeServerStream is a stream's server side: a context, and a record of the
// trailer.
type fakeServerStream struct {
	ctx     context.Context
	trailer metadata.MD
}

func (s *fakeServerStream) SetHeader(metadata.MD) error  { return nil }
func (s *fakeServerStream) SendHeader(metadata.MD) error { return nil }
func (s *fakeServerStream) SetTrailer(md metadata.MD)    { s.trailer = metadata.Join(s.trailer, md) }
func (s *fakeServerStream) Context() context.Context     { return s.ctx }
func (s *fakeServerStream) SendMsg(any) error            { return nil }
func (s *fakeServerStream) RecvMsg(any) error            { return nil }

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
