package semaphore_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/group"
	"github.com/fairsem/semaphore/httpsem"
	"github.com/fairsem/semaphore/keyed"
	"github.com/fairsem/semaphore/netsem"
)

// heldKey is a keyed set of capacity 1 whose key "k" is held until the test ends.
func heldKey(t *testing.T, opts ...keyed.Option) *keyed.Set {
	set := keyed.New(1, opts...)
	u, ok := set.TryAcquire("k", 1)
	require.True(t, ok)
	t.Cleanup(u.Release)
	return set
}

// heldLimiter is an adaptive limiter whose one slot is held until the test ends.
func heldLimiter(t *testing.T, opts ...semaphore.Option) *adaptive.Limiter {
	l := adaptive.New(semaphore.New(1, opts...), adaptive.NewAIMD(adaptive.AIMDConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1}))
	c, err := l.Acquire(context.Background())
	require.NoError(t, err)
	t.Cleanup(c.Release)
	return l
}

func limiterAcquire(l *adaptive.Limiter, ctx context.Context) error {
	c, err := l.Acquire(ctx)
	if err == nil {
		c.Release()
	}
	return err
}

// The shared meanings have one sentinel each, in the core: an error of any
// package of the module that means one of them matches that sentinel with
// errors.Is, and none of the others.
var sharedSentinels = []error{semaphore.ErrBroken, semaphore.ErrTimedOut, semaphore.ErrQueueFull, semaphore.ErrTooLarge}

// failing makes one package fail one call for one meaning.
type failing struct {
	pkg   string
	err   func(t *testing.T) error
	cause error // the error passed to Break, matched too; nil for other meanings
}

var errCause = errors.New("shutting down")

// heldSemaphore is a semaphore of one unit that is held until the test ends.
func heldSemaphore(t *testing.T, opts ...semaphore.Option) *semaphore.Semaphore {
	s := semaphore.New(1, opts...)
	require.True(t, s.TryAcquire(1))
	t.Cleanup(func() { s.Release(1) })
	return s
}

// heldController is an admission controller whose one count is held until the
// test ends.
func heldController(t *testing.T, opts ...admission.Option) *admission.Controller {
	c := admission.New(admission.Resources{Count: 1, Memory: 100}, append(opts, admission.WithName("vocab"))...)
	p, err := c.Acquire(context.Background(), "holder", 1)
	require.NoError(t, err)
	t.Cleanup(p.Release)
	return c
}

// queueOne queues an Acquire on c until the test ends, and waits until it is
// queued.
func queueOne(t *testing.T, c *admission.Controller) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if p, err := c.Acquire(ctx, "queued", 1); err == nil {
			p.Release()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return c.Stats().Waiters == 1 }, 10*time.Second, time.Millisecond)
}

// accept is netsem's Accept on a listener limited by s.
func accept(t *testing.T, s *semaphore.Semaphore) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := netsem.Listener(ln, s)
	defer l.Close()
	_, err = l.Accept()
	return err
}

func goTask(s *semaphore.Semaphore, ctx context.Context, n int64) error {
	g := group.New(s)
	err := g.Go(ctx, n, func() error { return nil })
	_ = g.Wait()
	return err
}

func expired(t *testing.T) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	t.Cleanup(cancel)
	return ctx
}

func TestSharedSentinels_EveryPackageMatchesTheCoreSentinelForEachSharedMeaning(t *testing.T) {
	for _, meaning := range []struct {
		name     string
		sentinel error
		by       []failing
	}{
		{"broken", semaphore.ErrBroken, []failing{
			{"semaphore", func(t *testing.T) error {
				s := semaphore.New(1)
				s.Break(errCause)
				return s.Acquire(context.Background(), 1)
			}, errCause},
			{"admission", func(t *testing.T) error {
				c := admission.New(admission.Resources{Count: 1})
				c.Break(errCause)
				_, err := c.Acquire(context.Background(), "op", 1)
				return err
			}, errCause},
			{"admission, removed from its group", func(t *testing.T) error {
				g := admission.NewGroup(admission.Resources{Count: 1})
				m := g.Add("m", 1)
				g.Remove(m)
				_, err := m.Acquire(context.Background(), "op", 1)
				return err
			}, nil},
			{"netsem", func(t *testing.T) error {
				s := semaphore.New(1)
				s.Break(errCause)
				return accept(t, s)
			}, errCause},
			{"group", func(t *testing.T) error {
				s := semaphore.New(1)
				s.Break(errCause)
				return goTask(s, context.Background(), 1)
			}, errCause},
			{"keyed", func(t *testing.T) error {
				set := keyed.New(1)
				set.Break(errCause)
				_, err := set.Acquire(context.Background(), "k", 1)
				return err
			}, errCause},
			{"keyed, global", func(t *testing.T) error {
				global := semaphore.New(1)
				global.Break(errCause)
				_, err := keyed.New(1, keyed.WithGlobal(global)).Acquire(context.Background(), "k", 1)
				return err
			}, errCause},
			{"adaptive", func(t *testing.T) error {
				s := semaphore.New(1)
				l := adaptive.New(s, adaptive.NewAIMD(adaptive.AIMDConfig{}))
				s.Break(errCause)
				return limiterAcquire(l, context.Background())
			}, errCause},
		}},
		{"timed out", semaphore.ErrTimedOut, []failing{
			{"semaphore", func(t *testing.T) error { return heldSemaphore(t).AcquireTimeout(0, 1) }, nil},
			{"semaphore, context deadline", func(t *testing.T) error { return heldSemaphore(t).Acquire(expired(t), 1) }, nil},
			{"admission", func(t *testing.T) error {
				_, err := heldController(t).Acquire(expired(t), "op", 1)
				return err
			}, nil},
			{"admission, drain", func(t *testing.T) error { return heldController(t).Drain(expired(t)) }, nil},
			{"group", func(t *testing.T) error { return goTask(heldSemaphore(t), expired(t), 1) }, nil},
			{"keyed", func(t *testing.T) error {
				_, err := heldKey(t).AcquireTimeout(0, "k", 1)
				return err
			}, nil},
			{"adaptive", func(t *testing.T) error { return limiterAcquire(heldLimiter(t), expired(t)) }, nil},
		}},
		{"queue full", semaphore.ErrQueueFull, []failing{
			{"semaphore", func(t *testing.T) error {
				return heldSemaphore(t, semaphore.WithMaxWaiters(0)).Acquire(context.Background(), 1)
			}, nil},
			{"admission", func(t *testing.T) error {
				c := heldController(t, admission.WithMaxWaiters(1))
				queueOne(t, c)
				_, err := c.Acquire(context.Background(), "op", 1)
				return err
			}, nil},
			{"admission, shed", func(t *testing.T) error {
				c := admission.New(admission.Resources{Count: 1}, admission.WithShedFactor(1))
				p, err := c.Acquire(context.Background(), "holder", 0)
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				shed := make(chan error, 1)
				go func() { _, err := c.Acquire(ctx, "op", 0); shed <- err }()
				require.Eventually(t, func() bool { return c.Stats().Waiters == 1 }, 10*time.Second, time.Millisecond)
				p.Release()
				err = <-shed
				require.ErrorIs(t, err, semaphore.ErrShed)
				return err
			}, nil},
			{"netsem", func(t *testing.T) error { return accept(t, heldSemaphore(t, semaphore.WithMaxWaiters(0))) }, nil},
			{"group", func(t *testing.T) error {
				return goTask(heldSemaphore(t, semaphore.WithMaxWaiters(0)), context.Background(), 1)
			}, nil},
			{"keyed", func(t *testing.T) error {
				_, err := heldKey(t, keyed.WithMaxWaiters(0)).Acquire(context.Background(), "k", 1)
				return err
			}, nil},
			{"adaptive", func(t *testing.T) error {
				return limiterAcquire(heldLimiter(t, semaphore.WithMaxWaiters(0)), context.Background())
			}, nil},
		}},
		{"too large", semaphore.ErrTooLarge, []failing{
			// admission has no such refusal: "always admit one" lets any request in.
			{"semaphore", func(t *testing.T) error { return semaphore.New(1).Acquire(context.Background(), 2) }, nil},
			{"netsem", func(t *testing.T) error { return accept(t, semaphore.New(0)) }, nil},
			{"group", func(t *testing.T) error { return goTask(semaphore.New(1), context.Background(), 2) }, nil},
			{"keyed", func(t *testing.T) error {
				_, err := keyed.New(1).Acquire(context.Background(), "k", 2)
				return err
			}, nil},
		}},
	} {
		for _, f := range meaning.by {
			t.Run(meaning.name+"/"+f.pkg, func(t *testing.T) {
				err := f.err(t)
				require.Error(t, err)
				assert.ErrorIs(t, err, meaning.sentinel)
				for _, other := range sharedSentinels {
					if other != meaning.sentinel {
						assert.NotErrorIs(t, err, other)
					}
				}
				if f.cause != nil {
					assert.ErrorIs(t, err, f.cause, "the error passed to Break is matched too")
				}
			})
		}
	}
}

// httpsem answers a request refused for a shared meaning the same way whether
// a core semaphore (Limit) or an admission controller (Admit) refused it.
func TestSharedSentinels_HTTPSemAnswersEachMeaningAlikeForLimitAndAdmit(t *testing.T) {
	serve := func(mw func(http.Handler) http.Handler) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mw(http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		return rec
	}
	for _, tc := range []struct {
		meaning    string
		limit      func(t *testing.T) *semaphore.Semaphore
		admit      func(t *testing.T) *admission.Controller
		retryAfter string
	}{
		{"broken", func(t *testing.T) *semaphore.Semaphore {
			s := semaphore.New(1)
			s.Break(errCause)
			return s
		}, func(t *testing.T) *admission.Controller {
			c := admission.New(admission.Resources{Count: 1})
			c.Break(errCause)
			return c
		}, ""},
		{"queue full", func(t *testing.T) *semaphore.Semaphore {
			return heldSemaphore(t, semaphore.WithMaxWaiters(0))
		}, func(t *testing.T) *admission.Controller {
			c := heldController(t, admission.WithMaxWaiters(1))
			queueOne(t, c)
			return c
		}, "1"},
	} {
		t.Run(tc.meaning, func(t *testing.T) {
			limited := serve(httpsem.Limit(tc.limit(t)))
			admitted := serve(httpsem.Admit(tc.admit(t)))
			assert.Equal(t, http.StatusServiceUnavailable, limited.Code)
			assert.Equal(t, limited.Code, admitted.Code)
			assert.Equal(t, tc.retryAfter, limited.Header().Get("Retry-After"))
			assert.Equal(t, tc.retryAfter, admitted.Header().Get("Retry-After"))
		})
	}
}

// A zero value made without its constructor panics in one shape in every package:
// "<package>: zero <Type>: create it with <constructor>".
func TestZeroValues_PanicInOneShapeInEveryPackage(t *testing.T) {
	for _, tc := range []struct {
		msg string
		use func()
	}{
		{"semaphore: zero Semaphore: create it with New", func() {
			var s semaphore.Semaphore
			_ = s.Acquire(context.Background(), 1)
		}},
		{"admission: zero Controller: create it with admission.New or Group.Add", func() {
			var c admission.Controller
			_, _ = c.Acquire(context.Background(), "op", 1)
		}},
		{"admission: zero Group: create it with admission.NewGroup", func() {
			var g admission.Group
			g.Add("m", 1)
		}},
		{"keyed: zero Set: create it with keyed.New", func() {
			var s keyed.Set
			_, _ = s.Acquire(context.Background(), "k", 1)
		}},
	} {
		assert.PanicsWithValue(t, tc.msg, tc.use)
	}
}
