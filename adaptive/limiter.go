package adaptive

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/shed"
)

// A Resizer is anything whose limit can be set, and which a Limiter drives:
// the core *semaphore.Semaphore, a keyed set's global limit, or, through
// ResizeFunc, any setter such as an admission controller's SetCountLimit.
type Resizer interface {
	// Resize sets the limit to capacity (>= 1). It must not revoke what is
	// held: the calls in excess finish, and new ones wait.
	Resize(capacity int64)
}

// ResizeFunc lets an ordinary function be a Resizer, as http.HandlerFunc lets
// one be a Handler:
//
//	l := adaptive.New(adaptive.ResizeFunc(ctrl.SetCountLimit), nil)
type ResizeFunc func(capacity int64)

// Resize calls f(capacity).
func (f ResizeFunc) Resize(capacity int64) { f(capacity) }

// A Limiter adapts a concurrency limit to the load a backend can take: it
// measures each call, from its grant to Done, feeds the calls to an Algorithm
// in sampling windows, and applies each new limit to its Resizer. Shrinking
// never revokes a call that holds units: the calls in excess finish, and new
// ones wait until the count is under the new limit.
//
// Most callers want Do. Acquire and Done are for calls whose verdict is known
// elsewhere (a stream, a handler that writes the status); Start measures a
// call admitted by something else (the keyed set or admission controller the
// Limiter drives). All methods are safe for concurrent use; no goroutine is
// started, and a call that is granted at once allocates nothing.
type Limiter struct {
	// Fixed after New.
	target Resizer              // what the limit is applied to
	gate   *semaphore.Semaphore // what Acquire and Do wait on: target when it is a semaphore, else the Limiter's own
	est    Estimator            // alg, if it estimates the capacity; else nil
	cfg    config

	// door decides who waits at the gate, and for how long (the deadline
	// rule, the drain, the levels); it keeps the units of the calls through
	// the gate by level, and the usual round trip: the last window's mean,
	// set under mu (see updateLocked), 0 before the first.
	door shed.Door

	// Atomic.
	inFlight atomic.Int64  // units granted and not ended (Start's included)
	limit    atomic.Int64  // the limit last applied (>= 1)
	estimate atomic.Int64  // est's last estimate; 0 unknown; set under mu
	acquired atomic.Uint64 // calls granted (Acquire, Do, Start)
	ignored  atomic.Uint64 // calls ended without a sample
	waited   atomic.Int64  // calls that found the limit reached since the last window closed

	mu sync.Mutex
	// Guarded by mu. The limit is applied under mu, so that Resize calls
	// happen in the order of the windows.
	alg        Algorithm
	win        window
	succeeded  uint64
	dropped    uint64
	windows    uint64
	increases  uint64
	decreases  uint64
	lastChange time.Time
}

// An Estimator is an Algorithm that also estimates the backend's capacity, in
// units; Capacity is one. A Limiter reports the estimate in Stats. An estimate
// is bounded by the load seen: while the load puts fewer units in flight than
// the backend could serve, it tells what the load used, not what the backend
// could take.
type Estimator interface {
	Estimate() int // 0 while unknown
}

// New returns a Limiter that drives target with alg.
//
// With a nil alg, the Limiter runs a Capacity with its defaults, starting from
// the target's capacity when the target reports one (a Capacity() int64
// method, as a semaphore has) and from Capacity's default initial limit
// otherwise. Given an alg, it starts from alg's initial limit. Either way the
// target is resized to the starting limit at once: New(semaphore.New(4),
// NewVegas(VegasConfig{})) runs at 20, Vegas's initial limit, and
// New(semaphore.New(4), nil) at 4.
//
// Acquire and Do wait on target when it is a *semaphore.Semaphore, whose
// options (WithMaxWaiters, WithName, an Observer) keep working, and whose
// other users count against the same limit without being measured. Given any
// other Resizer, they wait on a semaphore of the Limiter's own, resized with
// the target: calls admitted by the target are measured with Start instead.
//
// New panics if target is nil or an option is invalid.
func New(target Resizer, alg Algorithm, opts ...Option) *Limiter {
	if s, ok := target.(*semaphore.Semaphore); target == nil || ok && s == nil {
		panic("adaptive: New(nil Resizer)")
	}
	name := ""
	if n, ok := target.(interface{ Name() string }); ok {
		name = n.Name()
	}
	if alg == nil {
		cfg := CapacityConfig{}
		if c, ok := target.(interface{ Capacity() int64 }); ok && c.Capacity() > 0 {
			cfg.InitialLimit = int(min(c.Capacity(), semaphore.MaxUnits))
		}
		alg = NewCapacity(cfg)
	}
	l := &Limiter{target: target, alg: alg, cfg: newConfig(opts, name)}
	l.est, _ = alg.(Estimator)
	l.limit.Store(clampLimit(alg.Limit()))
	l.door.Init(l.cfg.shed)
	if s, ok := target.(*semaphore.Semaphore); ok {
		l.gate = s
	} else {
		l.gate = semaphore.New(l.limit.Load(), semaphore.WithName(l.cfg.name))
	}
	target.Resize(l.limit.Load())
	return l
}

// clampLimit keeps an algorithm's answer within what a semaphore takes.
func clampLimit(n int) int64 { return min(max(int64(n), 1), semaphore.MaxUnits) }

// Acquire waits for one unit under the current limit, as AcquireN(ctx, 1).
func (l *Limiter) Acquire(ctx context.Context) (c *Call, err error) {
	c = new(Call) // stays on the caller's stack when Acquire is inlined and c does not escape
	if err = l.acquire(ctx, c, 1, nil); err != nil {
		c = nil
	}
	return c, err
}

// AcquireN takes n units under the current limit for a call of ctx's
// Priority (PriorityFrom), and returns the granted Call, which the caller must
// end with Done or Release. The call counts n units in flight: the algorithm
// works in units, so that a memory budget or a batch size adapts as a count of
// calls does.
//
// The units are granted at once when they are free and nobody waits. A caller
// that finds the limit reached waits in the semaphore's FIFO wait list, if the
// rule lets it (see the package documentation): its expected wait (the units
// ahead of it and its own, at the rate the units in flight come back) plus
// the usual round trip must fit before ctx's deadline, and its wait within
// what its Priority allows; it waits at most that long, and a grant too late
// to be served before the deadline is handed on. A caller whose deadline
// cannot cover even the round trip is refused when the units are free too.
//
// It fails as the semaphore's Acquire does, with errors that wrap the core's
// sentinels: the context's end (ErrTimedOut for a deadline), ErrBroken,
// ErrTooLarge (n above the limit, which may shrink below it: give the
// algorithm a MinLimit of at least the largest weight), ErrQueueFull; and,
// refused by the rule, at once or once its wait reached what it allows, with
// an error whose outcome is semaphore.Shed, matching semaphore.ErrShed (and so
// ErrQueueFull). It panics if n < 1.
func (l *Limiter) AcquireN(ctx context.Context, n int64) (c *Call, err error) {
	c = new(Call) // as in Acquire
	if err = l.acquire(ctx, c, n, nil); err != nil {
		c = nil
	}
	return c, err
}

// AcquireTimeout is AcquireN with the wait bounded by wait, apart from ctx's
// deadline, which stays the caller's deadline for the rule: a caller that may
// wait 20ms for a call due in 200ms says so here, where a context of 20ms
// would tell the rule that the whole call must end within 20ms and be refused.
// The rule reads the bound as a door's wait budget: a caller whose expected
// wait exceeds it is refused at once (ErrShed), and a wait that reaches it
// fails with an error matching ErrTimedOut. A wait <= 0 takes the units only
// if they are free and nobody waits, and is refused otherwise. It fails as
// AcquireN does otherwise, and panics if n < 1.
func (l *Limiter) AcquireTimeout(ctx context.Context, n int64, wait time.Duration) (c *Call, err error) {
	b := shed.BudgetOf(ctx)
	if until := time.Now().Add(max(wait, 0)); b.WaitUntil.IsZero() || until.Before(b.WaitUntil) {
		b.WaitUntil = until
	}
	c = new(Call)
	if err = l.acquire(ctx, c, n, &b); err != nil {
		c = nil
	}
	return c, err
}

// Start starts measuring a call for units admitted by something else (the
// keyed set or admission controller this Limiter drives), after waiting in
// its queue for waited (0 if admitted at once): its round trip runs from now
// to Done, and a positive wait tells the algorithm that the load wanted more
// than the limit. Ending the returned
// Call gives back nothing but its units in the in-flight count: the caller
// still releases what it acquired. Start panics if units < 1 or waited < 0.
func (l *Limiter) Start(units int64, waited time.Duration) *Call {
	if units < 1 || waited < 0 {
		panic("adaptive: Limiter.Start(" + itoa(int(units)) + ", " + waited.String() + "): need units >= 1 and waited >= 0")
	}
	if waited > 0 {
		l.waited.Add(1)
	}
	c := new(Call)
	l.begin(c, units, shed.Levels, time.Now())
	return c
}

// Do runs fn while holding one unit, as DoN(ctx, 1, fn).
func (l *Limiter) Do(ctx context.Context, fn func(context.Context) error) error {
	return l.DoN(ctx, 1, fn)
}

// DoN runs fn while holding n units, as AcquireN then Done, and returns fn's
// error, or AcquireN's without running fn. The verdict on the call is
// WithClassifier's judgement of fn's error (by default: nil is Success; a
// timeout is TimedOut; a cancellation, a broken or too large call further
// down, Ignore; a refusal further down (queue full, shed), Dropped; any other
// error Success, because the call ran at the backend), given to Done, which
// decides what a timeout means. If fn panics, the units are given back
// without a sample and the panic goes on. DoN panics if n < 1.
func (l *Limiter) DoN(ctx context.Context, n int64, fn func(context.Context) error) error {
	var c Call
	if err := l.acquire(ctx, &c, n, nil); err != nil {
		return err
	}
	defer c.Release()
	err := fn(ctx)
	now := time.Now()
	v := l.cfg.classify(err)
	if v > TimedOut {
		panic("adaptive: the classifier returned " + v.String() + ", not a Verdict")
	}
	c.end(v, now)
	return err
}

// Limit returns the limit last applied.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns how many units are granted and not ended.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

// acquire takes n units for c within budget b, or ctx's (shed.BudgetOf) if b
// is nil.
func (l *Limiter) acquire(ctx context.Context, c *Call, n int64, b *shed.Budget) error {
	if n < 1 {
		panic("adaptive: Limiter.AcquireN(" + itoa(int(n)) + "): need n >= 1")
	}
	lv := shed.Level(PriorityFrom(ctx))
	start, waited, err := l.door.Acquire(ctx, l.gate, n, lv, b, (*subject)(l))
	if waited {
		// The limit was reached (or others waited): the load wants more than
		// it, whether the caller then waited or was refused.
		l.waited.Add(1)
	}
	if err != nil {
		return err
	}
	l.begin(c, n, lv, start)
	return nil
}

// begin starts measuring c, granted n units at level lv at start; lv is
// shed.Levels for a call admitted elsewhere (Start), which holds no units of
// the gate.
func (l *Limiter) begin(c *Call, n int64, lv shed.Level, start time.Time) {
	l.acquired.Add(1)
	*c = Call{l: l, start: start, units: n, inFlight: l.inFlight.Add(n), level: lv}
}

// subject names the Limiter in the errors of its door.
type subject Limiter

func (s *subject) Label() string { return errs.Label("adaptive limiter", s.cfg.name, (*Limiter)(s)) }

// end ends c with verdict v (Success, Dropped, Ignore, or TimedOut for a call
// granted too late, see Call.end): its sample goes into the window unless v is
// Ignore, a closed window updates the limit, and its units go back to the
// gate.
func (l *Limiter) end(c *Call, v Verdict, now time.Time) {
	l.inFlight.Add(-c.units)
	if v == Ignore {
		l.ignored.Add(1)
	} else {
		l.mu.Lock()
		switch v {
		case Dropped:
			l.dropped++
		case TimedOut:
			l.ignored.Add(1)
		default:
			l.succeeded++
		}
		l.win.add(now, now.Sub(c.start), c.inFlight, v)
		if s, ok := l.win.closeAt(now, l.cfg.minSamples, l.cfg.minTime, l.cfg.maxTime); ok {
			s.Waited = int(l.waited.Swap(0))
			l.updateLocked(s)
		}
		l.mu.Unlock()
	}
	if c.level < shed.Levels {
		l.door.Ended(c.level, c.units)
		l.gate.Release(c.units)
	}
}

// updateLocked gives a closed window to the algorithm and applies a changed
// limit.
func (l *Limiter) updateLocked(s Sample) {
	l.windows++
	if s.RTT > 0 {
		l.door.SetRTT(s.RTT)
	}
	old := l.limit.Load()
	n := clampLimit(l.alg.Update(s))
	if l.est != nil {
		l.estimate.Store(int64(l.est.Estimate()))
	}
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
	l.target.Resize(n)
	if l.gate != l.target {
		l.gate.Resize(n)
	}
	if l.cfg.onChange != nil {
		l.cfg.onChange(int(old), int(n))
	}
}
