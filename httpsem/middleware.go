package httpsem

import (
	"context"
	"net/http"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/shed"
)

// Limit returns middleware that lets a request through to the next handler only
// while it holds its weight in units of s (one unit unless WithWeight), and
// gives them back when the handler returns, also when it panics.
//
// A request that cannot take its units at once waits in s's FIFO wait list,
// bounded by s's WithMaxWaiters, if the deadline rule lets it (see the package
// documentation), and at most WithTimeout. It is refused, never left hanging:
// with the overload status (503, or WithStatus's) and Retry-After when the
// list is full, when the rule sheds it, when WithTimeout passes, or when the
// request's context ends (the client went away); with 503 and no Retry-After
// when s is broken or the weight exceeds s's capacity. Limit panics if s is
// nil or an option applies only to Admit.
func Limit(s *semaphore.Semaphore, opts ...Option) func(http.Handler) http.Handler {
	if s == nil {
		panic("httpsem: Limit(nil)")
	}
	c := newConfig(opts)
	if c.op != nil || c.memory != nil || c.dropped != nil {
		panic("httpsem: WithOp and WithMemory apply to Admit, WithDropped to Adaptive, not Limit")
	}
	// The door keeps what the rule reads that s does not: this middleware's
	// units in flight and waiting by level, and its requests' usual round
	// trip, from admission to the handler's return.
	door := new(shed.Door)
	cfg := shed.DefaultConfig()
	cfg.Off = c.noShed
	door.Init(cfg)
	subject := semSubject{s}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := int64(1)
			if c.weight != nil {
				if n = c.weight(r); n < 0 {
					panic("httpsem: weight " + itoa(n) + " for " + r.Method + " " + r.URL.Path + ": negative")
				}
			}
			lv := c.level(r)
			// The door tries first: a request that needs no wait is admitted
			// without a timer, so WithTimeout can never refuse it.
			b := c.budget(r)
			start, _, err := door.Acquire(r.Context(), s, n, lv, &b, subject)
			if err != nil {
				c.refuse(w, err)
				return
			}
			defer func() {
				s.Release(n)
				door.Ended(lv, n)
				door.Observe(time.Since(start))
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// semSubject names s in the errors of Limit's door, as s names itself.
type semSubject struct{ s *semaphore.Semaphore }

func (x semSubject) Label() string { return errs.Label("semaphore", x.s.Name(), x.s) }

// level is r's Priority, as the door counts it.
func (c *config) level(r *http.Request) shed.Level {
	var p adaptive.Priority
	if c.priority != nil {
		p = c.priority(r)
	} else {
		p = adaptive.PriorityFrom(r.Context())
	}
	if p > adaptive.Sheddable {
		panic("httpsem: priority " + p.String() + " for " + r.Method + " " + r.URL.Path + ": not a Priority")
	}
	return shed.Level(p)
}

// budget is what the request brings to the deadline rule: its context's
// deadline, and WithTimeout as its wait budget.
func (c *config) budget(r *http.Request) shed.Budget {
	var b shed.Budget
	b.Deadline, _ = r.Context().Deadline()
	if c.timeout > 0 {
		b.WaitUntil = time.Now().Add(c.timeout)
	}
	return b
}

// Admit returns middleware that admits each request through ctrl, under the
// operation name from the route (or WithOp) and the memory estimate from
// WithMemory, and releases the permit when the handler returns, also when it
// panics. The handler finds its permit with PermitFrom.
//
// A request that cannot be admitted at once waits in ctrl's FIFO queue, bounded
// by its WithMaxWaiters. It is refused, never left hanging: with the overload
// status (503, or WithStatus's) and Retry-After when the queue is full, when
// ctrl sheds it, when WithTimeout passes, or when the request's context ends;
// with 503 and no Retry-After when ctrl is broken. Admit panics if ctrl is nil
// or an option applies only to Limit.
func Admit(ctrl *admission.Controller, opts ...Option) func(http.Handler) http.Handler {
	if ctrl == nil {
		panic("httpsem: Admit(nil)")
	}
	c := newConfig(opts)
	if c.weight != nil || c.dropped != nil || c.priority != nil {
		panic("httpsem: WithWeight and WithPriority apply to Limit and Adaptive, WithDropped to Adaptive, not Admit")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			op := r.Pattern
			switch {
			case c.op != nil:
				op = c.op(r)
			case op == "":
				op = r.Method
			}
			var memory int64
			if c.memory != nil {
				if memory = c.memory(r); memory < 0 {
					panic("httpsem: memory estimate " + itoa(memory) + " for " + r.Method + " " + r.URL.Path + ": negative")
				}
			}
			ctx, cancel := c.waitContext(r)
			if c.noShed {
				ctx = shed.WithBudget(ctx, shed.Budget{}) // no budget for the controller's deadline rule
			} else if c.timeout > 0 {
				ctx = shed.WithBudget(ctx, c.budget(r)) // the controller's deadline rule reads the wait budget
			}
			p, err := ctrl.Acquire(ctx, op, memory)
			cancel()
			if err != nil {
				c.refuse(w, err)
				return
			}
			defer p.Release()
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), permitKey{}, p)))
		})
	}
}

type permitKey struct{}

// PermitFrom returns the admission permit of a request admitted by Admit, from
// the request's context, or nil. The permit is released when the handler
// returns; the handler must not keep it.
func PermitFrom(ctx context.Context) *admission.Permit {
	p, _ := ctx.Value(permitKey{}).(*admission.Permit)
	return p
}

// waitContext is the context a request waits with: its own, ended WithTimeout
// after the call. It is not a context.WithTimeout, because a deadline that has
// passed makes Acquire fail even when it could admit at once: the timeout is
// meant to bound the wait only. (Limit tries without waiting first, so a request
// that needs no wait is never refused by the timeout. Admit cannot try, so a
// timeout shorter than the way from here into the controller can fire first.)
func (c *config) waitContext(r *http.Request) (context.Context, context.CancelFunc) {
	return c.waitContextOf(r.Context())
}

// waitContextOf is waitContext for a context derived from the request's.
func (c *config) waitContextOf(parent context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return parent, func() {}
	}
	ctx, cancel := context.WithCancel(parent)
	timer := time.AfterFunc(c.timeout, cancel)
	return ctx, func() {
		timer.Stop()
		cancel()
	}
}

// refuse answers a request that was not admitted, by how its wait ended
// (semaphore.OutcomeOf), never by the sentinels err matches, which a context's
// cause can match too: 503 without Retry-After when it can never be served here
// (Broken, TooLarge), the overload status with Retry-After otherwise.
func (c *config) refuse(w http.ResponseWriter, err error) {
	code := c.status
	if o, _ := semaphore.OutcomeOf(err); o == semaphore.Broken || o == semaphore.TooLarge {
		code = http.StatusServiceUnavailable
	} else if v := c.retryAfterValue(); v != "" {
		w.Header().Set("Retry-After", v)
	}
	http.Error(w, http.StatusText(code), code)
}
