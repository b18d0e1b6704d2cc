package shed

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// A Gate is the semaphore a Door admits to: a core *semaphore.Semaphore, or a
// wrapper that takes its units another way (as semaphore.Units). Its methods
// mean what the core semaphore's do.
type Gate interface {
	TryAcquire(n int64) bool
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
	Capacity() int64
	Available() int64
	Waiters() int
	Err() error
}

var _ Gate = (*semaphore.Semaphore)(nil)

// A Door runs the rule in front of a Gate, which stays the one wait list: a
// caller the rule admits waits in the gate's FIFO order, bounded by the
// rule's Decision.Wait, and is granted by the gate's own rule. The Door keeps
// what the rule reads that the gate does not: the units of its callers in
// flight and waiting, by level, the usual round trip, and when the queue was
// last found empty. Init it before use; it must not be copied after.
type Door struct {
	cfg Config // fixed after Init

	// Atomic. Each is a reading of its own; a sum of several, read one after
	// the other, may mix two moments, which a heuristic tolerates.
	rtt       atomic.Int64 // the usual round trip in ns (Observe or SetRTT); 0 unknown
	lastEmpty atomic.Int64 // Unix ns when a caller last found the queue empty (see markEmpty)
	lastShed  atomic.Int64 // Unix ns when a sheddable call was last shed; 0 never
	waiters   atomic.Int64 // calls waiting in the semaphore through this door
	levels    [Levels]counters
}

// counters are one level's readings.
type counters struct {
	inFlight   atomic.Int64  // units granted through the door and not ended
	waiting    atomic.Int64  // units waiting through the door
	acquired   atomic.Uint64 // calls granted
	shed       atomic.Uint64 // calls shed: at once, after waiting, or at their grant
	shedAtOnce atomic.Uint64 // of those, refused before waiting
}

// Init sets the door's policy. It panics unless cfg's Target and Interval are
// positive and its floors are in [0, 1]: the doors check their options first.
func (d *Door) Init(cfg Config) {
	if cfg.Target <= 0 || cfg.Interval <= 0 {
		panic("shed: Door.Init: Target and Interval must be positive")
	}
	for _, f := range cfg.Floors {
		if !(f >= 0 && f <= 1) {
			panic("shed: Door.Init: a floor outside [0, 1]")
		}
	}
	d.cfg = cfg
	d.lastEmpty.Store(time.Now().UnixNano())
}

// Config returns the door's policy.
func (d *Door) Config() Config { return d.cfg }

// RTT returns the usual round trip, 0 while unknown.
func (d *Door) RTT() time.Duration { return time.Duration(d.rtt.Load()) }

// SetRTT sets the usual round trip (an adaptive Limiter's last window mean).
func (d *Door) SetRTT(rtt time.Duration) { d.rtt.Store(int64(max(rtt, 1))) }

// Observe folds one call's round trip into the usual one, an exponentially
// weighted mean with weight 1/8 for the newest, as TCP's smoothed RTT: a door
// that measures no windows (a plain semaphore's) calls it as each call ends.
func (d *Door) Observe(rtt time.Duration) {
	rtt = max(rtt, 1)
	for {
		old := d.rtt.Load()
		next := int64(rtt)
		if old > 0 {
			next = max(old+(int64(rtt)-old)/8, 1)
		}
		if d.rtt.CompareAndSwap(old, next) {
			return
		}
	}
}

// Acquire takes n units of the gate sem for a caller of level lv, as the rule allows:
// at once when they are free and nobody waits, unless the caller's deadline
// cannot cover the usual round trip; else it decides (Config.Decide) and waits
// in sem's FIFO order at most Decision.Wait, and hands on a grant too late to
// be served in time. It returns when the units were granted and whether the
// caller found the limit reached (it waited, or was refused for it); its error
// is sem's (the context's end, broken, too large, queue full), or a refusal
// whose outcome is semaphore.Shed, matching semaphore.ErrShed, about subject;
// a wait that reaches the door's wait bound (Budget.WaitUntil) fails as sem
// fails it at a deadline, timed out. The budget is *b, or, if b is nil, what
// ctx carries (BudgetOf). The caller gives the units back to sem and calls
// Ended when the call ends.
func (d *Door) Acquire(ctx context.Context, sem Gate, n int64, lv Level, b *Budget, subject errs.Subject) (granted time.Time, waited bool, err error) {
	var now time.Time
	if rtt := d.RTT(); rtt > 0 && !d.cfg.Off {
		// Only a deadline can refuse a caller that needs no wait.
		var dl time.Time
		if b != nil {
			dl = b.Deadline
		} else if _, ok := ctx.Deadline(); ok {
			dl = BudgetOf(ctx).Deadline
		}
		if !dl.IsZero() {
			if now = time.Now(); !dl.After(now) {
				// The deadline has passed: the caller's own, not the rule's.
				return now, false, d.plain(ctx, sem, n, lv)
			} else if dl.Sub(now) < rtt {
				return now, false, d.refuse(lv, now, subject, n, "shed at once: "+dl.Sub(now).Round(time.Microsecond).String()+
					" left before its deadline, less than the round trip "+rtt.String())
			}
		}
	}
	if sem.TryAcquire(n) {
		if now.IsZero() {
			now = time.Now()
		}
		d.markEmpty(now)
		d.grant(lv, n)
		return now, false, nil
	}
	if b == nil {
		bc := BudgetOf(ctx)
		b = &bc
	}
	return d.wait(ctx, sem, n, lv, *b, subject)
}

// wait is Acquire's path for a caller that found the limit reached.
func (d *Door) wait(ctx context.Context, sem Gate, n int64, lv Level, b Budget, subject errs.Subject) (time.Time, bool, error) {
	start := time.Now()
	if n > sem.Capacity() || sem.Err() != nil || ctx.Err() != nil || !b.Deadline.IsZero() && !b.Deadline.After(start) {
		// It can never fit, nothing will be granted, or the caller's own
		// context has ended: the semaphore's answer (too large, broken, timed
		// out, cancelled) says more than the rule's.
		return start, true, d.plain(ctx, sem, n, lv)
	}
	if sem.Waiters() == 0 {
		d.lastEmpty.Store(start.UnixNano())
	}
	dec := d.cfg.Decide(start, lv, n, b, d.readings(sem, lv, start))
	if dec.Refuse != "" {
		return start, true, d.refuse(lv, start, subject, n, "shed at once: "+dec.Refuse)
	}
	wctx, cancel := ctx, context.CancelFunc(nil)
	if until := start.Add(dec.Wait); dec.Wait != Forever {
		// A bound at the context's own deadline (nothing measured yet) is the
		// context's: the wait times out, as it would without the rule.
		if dl, ok := ctx.Deadline(); !ok || until.Before(dl) {
			wctx, cancel = context.WithDeadline(ctx, until)
		}
	}
	c := &d.levels[lv]
	c.waiting.Add(n)
	d.waiters.Add(1)
	err := sem.Acquire(wctx, n)
	d.waiters.Add(-1)
	c.waiting.Add(-n)
	if cancel != nil {
		cancel()
	}
	now := time.Now()
	if err != nil {
		if o, _ := semaphore.OutcomeOf(err); o == semaphore.TimedOut && wctx != ctx && ctx.Err() == nil && dec.Bound != WaitBudget {
			// The rule's bound, not the caller's context or the door's
			// wait budget, ended the wait.
			d.shed(lv, now, false)
			return now, true, d.fail(subject, n, "shed: waited "+now.Sub(start).Round(time.Microsecond).String()+
				", the most "+dec.Wait.Round(time.Microsecond).String()+" "+dec.Why)
		}
		return now, true, err
	}
	// Granted, but perhaps too late: the round trip may have grown since the
	// caller arrived, and the drain of WithStandingQueue hands on a default
	// call that waited past its target in a queue that stood meanwhile.
	why := ""
	if rtt := d.RTT(); !d.cfg.Off && !b.Deadline.IsZero() && rtt > 0 && b.Deadline.Sub(now) < rtt {
		why = "granted with " + b.Deadline.Sub(now).Round(time.Microsecond).String() +
			" left before its deadline, less than the round trip " + rtt.String()
	} else if d.cfg.Always && lv == Default && now.Sub(start) > d.cfg.Target && d.standing(now) {
		why = "granted after " + now.Sub(start).String() + " in a queue standing for over " + d.cfg.Interval.String()
	}
	if why != "" {
		sem.Release(n)
		d.shed(lv, now, false)
		return now, true, d.fail(subject, n, "shed: "+why)
	}
	d.grant(lv, n)
	return now, true, nil
}

// plain is sem's own Acquire, without the rule, for a caller the rule has
// nothing to say about. It is usually refused; if it is granted all the same
// (a deadline passed whose context has not ended yet, a capacity grown
// meanwhile), the door counts it as any grant.
func (d *Door) plain(ctx context.Context, sem Gate, n int64, lv Level) error {
	err := sem.Acquire(ctx, n)
	if err == nil {
		d.grant(lv, n)
	}
	return err
}

// readings gathers what Decide reads, for a caller of level lv at now.
func (d *Door) readings(sem Gate, lv Level, now time.Time) Readings {
	r := Readings{Limit: sem.Capacity(), Available: sem.Available(), RTT: d.RTT(), Standing: d.standing(now)}
	for i := range d.levels {
		c := &d.levels[i]
		f, w := c.inFlight.Load(), c.waiting.Load()
		r.InFlight += f
		r.Ahead += w
		if Level(i) == lv {
			r.LevelUse = f + w
		}
	}
	// Waiters of sem's other users: at least a unit each.
	r.Ahead += max(int64(sem.Waiters())-d.waiters.Load(), 0)
	if last := d.lastShed.Load(); last != 0 && now.UnixNano()-last <= int64(d.cfg.Interval) {
		r.Shedding = true
	}
	return r
}

// standing reports whether nobody found the queue empty within the interval
// before now.
func (d *Door) standing(now time.Time) bool {
	return now.UnixNano()-d.lastEmpty.Load() > int64(d.cfg.Interval)
}

// markEmpty records that a caller found the queue empty at now. It writes only
// when the last record is older than a sixteenth of the interval, so that
// callers granted at once do not all write one word: the queue may be taken
// to stand up to that much early.
func (d *Door) markEmpty(now time.Time) {
	if t := now.UnixNano(); t-d.lastEmpty.Load() > int64(d.cfg.Interval)/16 {
		d.lastEmpty.Store(t)
	}
}

func (d *Door) grant(lv Level, n int64) {
	c := &d.levels[lv]
	c.inFlight.Add(n)
	c.acquired.Add(1)
}

// Ended gives back a granted call's n units of level lv in the door's count.
func (d *Door) Ended(lv Level, n int64) { d.levels[lv].inFlight.Add(-n) }

func (d *Door) shed(lv Level, now time.Time, atOnce bool) {
	c := &d.levels[lv]
	c.shed.Add(1)
	if atOnce {
		c.shedAtOnce.Add(1)
	}
	if lv == Sheddable {
		d.lastShed.Store(now.UnixNano())
	}
}

func (d *Door) refuse(lv Level, now time.Time, subject errs.Subject, n int64, why string) error {
	d.shed(lv, now, true)
	return d.fail(subject, n, why)
}

// fail is the error of a shed caller: its outcome is semaphore.Shed, and it
// matches semaphore.ErrShed (and so semaphore.ErrQueueFull) only.
func (d *Door) fail(subject errs.Subject, n int64, why string) error {
	return &errs.Error{Subject: subject, Op: "acquire", N: n, Why: why,
		Outcome: semaphore.Shed, Matches: []error{semaphore.ErrShed}}
}

// Counts is one level's readings, from Door.Level.
type Counts struct {
	InFlight   int64  // units granted and not ended
	Waiting    int64  // units waiting
	Acquired   uint64 // calls granted
	Shed       uint64 // calls shed: at once, after waiting, or at their grant
	ShedAtOnce uint64 // of those, refused before waiting
}

// Level returns level lv's readings.
func (d *Door) Level(lv Level) Counts {
	c := &d.levels[lv]
	return Counts{InFlight: c.inFlight.Load(), Waiting: c.waiting.Load(), Acquired: c.acquired.Load(),
		Shed: c.shed.Load(), ShedAtOnce: c.shedAtOnce.Load()}
}

// Waiters returns how many calls wait through the door now.
func (d *Door) Waiters() int { return int(d.waiters.Load()) }

// budgetKey keys a door's Budget in a context.
type budgetKey struct{}

// WithBudget returns ctx carrying b for the doors behind it (an outer door,
// such as httpsem's, telling an adaptive Limiter its wait bound), merged with
// any budget ctx carries already: the earlier of each bound.
func WithBudget(ctx context.Context, b Budget) context.Context {
	if old, ok := ctx.Value(budgetKey{}).(Budget); ok {
		b.Deadline, b.WaitUntil = earlier(b.Deadline, old.Deadline), earlier(b.WaitUntil, old.WaitUntil)
	}
	return context.WithValue(ctx, budgetKey{}, b)
}

// BudgetOf returns the budget a door put in ctx, else ctx's deadline as the
// caller's deadline.
func BudgetOf(ctx context.Context) Budget {
	if b, ok := ctx.Value(budgetKey{}).(Budget); ok {
		return b
	}
	dl, _ := ctx.Deadline()
	return Budget{Deadline: dl}
}

// earlier returns the earlier of two times, a zero one meaning none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}
