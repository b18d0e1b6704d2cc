// Package shed is the one place where the module's doors (an adaptive
// Limiter, httpsem's middleware, grpcsem's limiters, an admission controller)
// decide whether a caller that finds the limit reached may wait for it, and for
// how long: the deadline rule, the standing-queue drain and the levels of
// criticality. Decide is the rule, a pure function of readings; Door runs it in
// front of a core semaphore and keeps the readings it needs.
//
// # The rule
//
// A caller arrives with a budget (Budget): its deadline, which must cover the
// wait and the usual round trip, and a door's wait bound (httpsem's and
// grpcsem's WithTimeout), which must cover the wait. Its expected wait is the
// units that must come back before it fits, over the rate at which they come
// back: the units in flight (or the limit, if more) per usual round trip
// (ExpectedWait). It is refused at once when that wait does not fit what its
// budget and its level allow; once admitted, it waits at most that long, and a
// grant that comes too late to be served in time is handed on (Door.Acquire).
//
// A level caps the wait of its calls (LevelCap). A sheddable call waits at
// most the standing-queue target, always. A default call waits at most twice
// the target while sheddable calls are being shed (one was within the
// interval), and otherwise at most the target while the queue stands (CoDel:
// nobody found it empty for the interval) if it has a budget or the drain is
// for everyone (Config.Always). A critical call is capped by its budget alone.
// So, as the load grows, the queue's expected wait rises past the sheddable
// cap first, and only once refusing every sheddable call does not hold it
// does it reach the default cap; a critical call finds a queue of at most
// twice the target while either level is shed. A floor lets a level's calls
// skip its cap while the level holds less than its share of the limit.
//
// Before anything is measured (no round trip yet), the expected wait is
// unknown: no caller is refused on it, the deadline counts whole (no round
// trip to subtract), and the caps still bound the waits.
package shed

import (
	"math"
	"strconv"
	"time"
)

// A Level is a call's criticality; its values are adaptive.Priority's.
type Level uint8

const (
	Default   Level = iota // the zero value: a call that says nothing
	Critical               // shed last: only its budget caps its wait
	Sheddable              // shed first: it never waits long
	Levels                 // how many levels there are
)

// String names the level as metrics and messages do.
func (lv Level) String() string {
	switch lv {
	case Default:
		return "default"
	case Critical:
		return "critical"
	case Sheddable:
		return "sheddable"
	}
	return "Level(" + itoa(int64(lv)) + ")"
}

// Config is a door's policy; the zero Config is the rule off with no drain.
type Config struct {
	// Off turns the deadline rule off: budgets are ignored, and a caller waits
	// as long as its context allows (the levels' caps still apply, as does
	// the drain when Always).
	Off bool
	// Target is the wait the drain allows once the queue stands (CoDel's
	// target); Interval is how long nobody must have found the queue empty
	// for it to stand. Both > 0 in a door.
	Target, Interval time.Duration
	// Always drains a standing queue for every caller (WithStandingQueue),
	// not only for those with a budget, and hands on a default call granted
	// after waiting longer than Target in a queue that stands.
	Always bool
	// Floors[lv] is the share of the limit, in [0, 1], that level lv may hold
	// (in flight and waiting, in units) whatever its cap.
	Floors [Levels]float64
}

// DefaultTarget and DefaultInterval are the standing-queue parameters of a
// door that was given none: those of "Fail at Scale".
const (
	DefaultTarget   = 5 * time.Millisecond
	DefaultInterval = 100 * time.Millisecond
)

// DefaultConfig returns the policy of a door that was given no option: the
// rule on, the drain for callers with a budget, with DefaultTarget and
// DefaultInterval.
func DefaultConfig() Config { return Config{Target: DefaultTarget, Interval: DefaultInterval} }

// Budget is what a caller brings to a door: the time it has.
type Budget struct {
	// Deadline is the caller's deadline: the wait and the usual round trip
	// must fit before it. Zero: none.
	Deadline time.Time
	// WaitUntil bounds the wait alone (a door's WithTimeout). Zero: none.
	WaitUntil time.Time
}

// Known reports whether the budget says anything.
func (b Budget) Known() bool { return !b.Deadline.IsZero() || !b.WaitUntil.IsZero() }

// Readings are what a door knows when a caller arrives: true readings, each a
// lower bound where it cannot be exact.
type Readings struct {
	Limit     int64         // the limit now (the semaphore's capacity)
	Available int64         // units free now, as the semaphore reports them (never negative)
	InFlight  int64         // units granted through the door and not ended
	Ahead     int64         // units waiting ahead of the caller (at least one per waiter)
	RTT       time.Duration // the usual round trip, from grant to end; 0 unknown
	Standing  bool          // nobody found the queue empty for the interval
	Shedding  bool          // a sheddable call was shed within the interval
	LevelUse  int64         // units the caller's level holds and waits for
}

// ExpectedWait returns how long a caller for n units should wait, and whether
// that is known (a round trip has been measured). The units that must come
// back before it fits are those ahead of it and its own, less what is free:
// counted from the door's own calls (in flight past the limit) and from the
// semaphore's free units (which also sees units held by others), whichever
// is more. They come back at the rate of the units in flight, or of the limit
// if more, per round trip: Little's law for a saturated limit, which is when
// anybody waits.
func ExpectedWait(r Readings, n int64) (time.Duration, bool) {
	if r.RTT <= 0 {
		return 0, false
	}
	need := max(r.Ahead+n-r.Available, r.InFlight+r.Ahead+n-r.Limit)
	if need <= 0 {
		return 0, true
	}
	rate := max(r.InFlight, r.Limit, 1)
	// In floating point: need x RTT can overflow a Duration.
	w := float64(need) / float64(rate) * float64(r.RTT)
	if w >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return time.Duration(w), true
}

// A Decision is the rule's answer for one caller.
type Decision struct {
	// Refuse says why the caller is refused at once; "" when it may wait.
	Refuse string
	// Wait is the longest it may wait; Forever when nothing bounds it but its
	// context.
	Wait time.Duration
	// Bound is what set Wait; Why names it, for the message of a wait cut
	// short.
	Bound Bound
	Why   string
}

// A Bound is what bounds a caller's wait.
type Bound uint8

const (
	Unbounded     Bound = iota // nothing but the caller's context
	WaitBudget                 // the door's wait bound, Budget.WaitUntil: a wait that reaches it timed out, as it would without the rule
	DeadlineBound              // the deadline less the usual round trip: the rule's own
	LevelCap                   // the cap of the caller's level: the rule's own
)

// Forever is Decision.Wait when nothing but the caller's context bounds it.
const Forever = time.Duration(math.MaxInt64)

// Decide applies the rule to a caller at level lv for n units that arrives at
// now with budget b and finds the limit reached (see the package
// documentation). It is a pure function. With the rule off (Config.Off), a
// door's wait bound still bounds the wait, but nobody is refused on it.
func (c *Config) Decide(now time.Time, lv Level, n int64, b Budget, r Readings) Decision {
	d := Decision{Wait: Forever}
	if !b.WaitUntil.IsZero() {
		d.Wait, d.Bound, d.Why = b.WaitUntil.Sub(now), WaitBudget, "of its wait budget"
	}
	if !c.Off && !b.Deadline.IsZero() {
		if w := b.Deadline.Sub(now) - r.RTT; w < d.Wait {
			d.Wait, d.Bound, d.Why = w, DeadlineBound, "before its deadline, less the round trip "+r.RTT.String()
		}
	}
	if cap, why := c.levelCap(lv, b, r, n); cap < d.Wait {
		d.Wait, d.Bound, d.Why = cap, LevelCap, why
	}
	if c.Off && d.Bound == WaitBudget {
		return d
	}
	if d.Wait <= 0 {
		d.Refuse = "no time left to wait: " + d.Wait.Round(time.Microsecond).String() + " " + d.Why
		return d
	}
	if w, ok := ExpectedWait(r, n); ok && w > d.Wait {
		d.Refuse = "expected wait " + w.Round(time.Microsecond).String() + " (" + itoa(r.Ahead) + " units ahead, " +
			itoa(r.InFlight) + " in flight, limit " + itoa(r.Limit) + ") exceeds the " +
			d.Wait.Round(time.Microsecond).String() + " " + d.Why
	}
	return d
}

// levelCap is the longest a call of level lv may wait by its level, Forever
// when its level does not cap it, and why.
func (c *Config) levelCap(lv Level, b Budget, r Readings, n int64) (time.Duration, string) {
	if f := c.Floors[lv]; f > 0 && float64(r.LevelUse+n) <= f*float64(r.Limit) {
		return Forever, ""
	}
	switch lv {
	case Sheddable:
		return c.Target, "a sheddable call waits"
	case Default:
		switch {
		case r.Shedding:
			return 2 * c.Target, "a default call waits while sheddable calls are shed"
		case r.Standing && (c.Always || !c.Off && b.Known()):
			return c.Target, "a call waits in a queue standing for over " + c.Interval.String()
		}
	}
	return Forever, ""
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
