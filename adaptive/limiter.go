package adaptive

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
)

// A Limiter adapts a concurrency limit to the load a backend can take: it
// measures each call it admits, from its grant to Done, feeds the calls to an
// Algorithm in sampling windows, and applies each new limit to the semaphore's
// capacity with Resize (or to an admission.Controller's count limit). Shrinking
// never revokes a call that holds a slot: the calls in excess finish, and new
// ones wait until the count is under the new limit.
//
// Most callers want Do. Acquire and Done are for calls whose outcome is known
// elsewhere (a stream, a handler that writes the status). All methods are safe
// for concurrent use; no goroutine is started, and a call that is granted at
// once allocates nothing.
type Limiter struct {
	// Fixed after New.
	sem  *semaphore.Semaphore  // the semaphore it drives; nil when it drives ctrl
	ctrl *admission.Controller // the controller it drives; nil when it drives sem
	cfg  config

	// Atomic.
	inFlight   atomic.Int64  // calls granted and not ended
	limit      atomic.Int64  // the limit last applied (>= 1)
	granted    atomic.Uint64 // calls granted (Acquire, Do, Track)
	ignored    atomic.Uint64 // calls ended without a sample
	lastEmpty  atomic.Int64  // standing queue: last time, in Unix ns, a caller found no waiter
	typicalRTT atomic.Int64  // the last window's mean RTT in ns, 0 before; set under mu

	mu sync.Mutex
	// Guarded by mu. The limit is applied to the semaphore under mu, so that
	// Resize calls happen in the order of the windows.
	alg        Algorithm
	win        window
	succeeded  uint64
	dropped    uint64
	shed       uint64
	windows    uint64
	increases  uint64
	decreases  uint64
	lastChange time.Time
}

// New returns a Limiter that drives the capacity of sem with alg, and resizes
// sem to alg's initial limit at once. The Limiter's calls take one unit each;
// other users of sem may take units too, and count against the same limit but
// are not measured. New panics if sem or alg is nil or an option is invalid.
func New(sem *semaphore.Semaphore, alg Algorithm, opts ...Option) *Limiter {
	if sem == nil {
		panic("adaptive: New(nil semaphore)")
	}
	l := newLimiter(alg, opts, sem.Name())
	l.sem = sem
	sem.Resize(l.limit.Load())
	return l
}

// NewController returns a Limiter that drives the count limit of ctrl with alg
// (memory is left alone), and sets it to alg's initial limit at once. Calls are
// admitted by ctrl (its Acquire or Do); the Limiter measures them with Track.
// Acquire and Do of such a Limiter panic. NewController panics if ctrl or alg
// is nil, an option is invalid, or ctrl is a member of a group (its limits
// follow the group's).
func NewController(ctrl *admission.Controller, alg Algorithm, opts ...Option) *Limiter {
	if ctrl == nil {
		panic("adaptive: NewController(nil controller)")
	}
	l := newLimiter(alg, opts, ctrl.Stats().Name)
	l.ctrl = ctrl
	ctrl.SetCountLimit(l.limit.Load())
	return l
}

func newLimiter(alg Algorithm, opts []Option, name string) *Limiter {
	if alg == nil {
		panic("adaptive: nil Algorithm")
	}
	l := &Limiter{alg: alg, cfg: newConfig(opts, name)}
	l.limit.Store(clampLimit(alg.Limit()))
	l.lastEmpty.Store(time.Now().UnixNano())
	return l
}

// clampLimit keeps an algorithm's answer within what a semaphore takes.
func clampLimit(n int) int64 { return min(max(int64(n), 1), semaphore.MaxUnits) }

// Acquire waits for a slot under the current limit, as the semaphore's
// Acquire(ctx, 1) does (FIFO, and the same errors, which wrap the core's
// sentinels), and returns the granted Call, which the caller must end with
// Done or Release. With WithStandingQueue, a wait may also fail with an error
// matching semaphore.ErrShed. Acquire panics on a Limiter made by NewController.
func (l *Limiter) Acquire(ctx context.Context) (*Call, error) {
	c := new(Call) // stays on the caller's stack when Acquire is inlined and c does not escape
	if err := l.acquire(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Track starts measuring a call admitted elsewhere, by the controller or
// semaphore whose limit this Limiter drives: its round trip runs from now to
// Done. Ending the returned Call gives back nothing but its place in the
// in-flight count: the caller still releases what it acquired.
func (l *Limiter) Track() *Call {
	c := new(Call)
	l.begin(c)
	return c
}

// Do runs fn while holding a slot, as Acquire then Done, and returns fn's
// error, or Acquire's without running fn. The verdict on the call comes from
// WithClassifier's function (by default: nil is Success, an error matching
// context.DeadlineExceeded or semaphore.ErrTimedOut is Dropped,
// context.Canceled is Ignore, any other error Success), except that a timeout
// sooner after the grant than the last window's mean round trip is Ignore: the
// call was granted with too little of its deadline left, which says the wait
// was long, not that the backend was slow. If fn panics, the slot is given
// back without a sample and the panic goes on.
func (l *Limiter) Do(ctx context.Context, fn func(context.Context) error) error {
	var c Call
	if err := l.acquire(ctx, &c); err != nil {
		return err
	}
	defer c.Release()
	err := fn(ctx)
	now := time.Now()
	o := l.cfg.classify(err)
	if o > Ignore {
		panic("adaptive: the classifier returned " + o.String() + ", not an Outcome")
	}
	if o == Dropped && isTimeout(err) && now.Sub(c.start) < time.Duration(l.typicalRTT.Load()) {
		// Timed out sooner than the backend usually answers: the call was
		// granted with too little of its deadline left, so the timeout tells
		// of a long wait in the queue, not of a slow backend.
		o = Ignore
	}
	c.ended = true
	l.end(&c, o, now)
	return err
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, semaphore.ErrTimedOut)
}

// Limit returns the limit last applied.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns how many calls are granted and not ended.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

func (l *Limiter) acquire(ctx context.Context, c *Call) error {
	if l.sem == nil {
		panic("adaptive: Acquire on a Limiter that drives an admission.Controller; admit with the controller and measure with Track")
	}
	var err error
	if l.cfg.standingTarget > 0 {
		err = l.acquireStanding(ctx)
	} else {
		err = l.sem.Acquire(ctx, 1)
	}
	if err != nil {
		return err
	}
	l.begin(c)
	c.unit = true
	return nil
}

func (l *Limiter) begin(c *Call) {
	l.granted.Add(1)
	*c = Call{l: l, start: time.Now(), inFlight: int(l.inFlight.Add(1))}
}

// end ends c: its sample goes into the window unless o is Ignore, a closed
// window updates the limit, and its unit goes back to the semaphore.
func (l *Limiter) end(c *Call, o Outcome, now time.Time) {
	l.inFlight.Add(-1)
	if o == Ignore {
		l.ignored.Add(1)
	} else {
		l.mu.Lock()
		if o == Dropped {
			l.dropped++
		} else {
			l.succeeded++
		}
		l.win.add(now, now.Sub(c.start), c.inFlight, o == Dropped)
		if s, ok := l.win.closeAt(now, l.cfg.minSamples, l.cfg.minTime, l.cfg.maxTime); ok {
			l.updateLocked(s)
		}
		l.mu.Unlock()
	}
	if c.unit {
		l.sem.Release(1)
	}
}

// updateLocked gives a closed window to the algorithm and applies a changed
// limit.
func (l *Limiter) updateLocked(s Sample) {
	l.windows++
	if s.RTT > 0 {
		l.typicalRTT.Store(int64(s.RTT))
	}
	old := l.limit.Load()
	n := clampLimit(l.alg.Update(s))
	if n == old {
		return
	}
	if n > old {
		l.increases++
	} else {
		l.decreases++
	}
	l.lastChange = s.Time
	l.limit.Store(n)
	if l.sem != nil {
		l.sem.Resize(n)
	} else {
		l.ctrl.SetCountLimit(n)
	}
	if l.cfg.onChange != nil {
		l.cfg.onChange(int(old), int(n))
	}
}

// defaultClassify is Do's verdict without WithClassifier.
func defaultClassify(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case isTimeout(err):
		return Dropped
	case errors.Is(err, context.Canceled):
		return Ignore
	}
	return Success
}
