package semaphore

import (
	"log/slog"
	"time"
)

// An Option configures a Semaphore at construction. Options are applied in order;
// a later one overrides an earlier one of the same kind.
type Option func(*config)

// config holds what the options set. New points every semaphore made without
// options at noOptions, and gives one made with options a config of its own.
type config struct {
	name          string
	maxWaiters    int  // -1: unbounded
	badMaxWaiters bool // WithMaxWaiters was given a negative value; New panics

	observer Observer    // WithObserver; nil: none
	tracking trackConfig // WithHolderTracking, WithAcquireStacks, WithLeakDetection, WithWatchdog
}

// WithName names the semaphore. The name appears in every error and panic message,
// in String and in Stats, so a log line says which limit was hit.
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// WithMaxWaiters bounds the wait list: a call that would become waiter number m+1
// fails at once with an error matching ErrQueueFull instead of queuing. This is load
// shedding: when the queue is already long, a new request would wait longer than it
// is worth, so it is better refused now. m = 0 allows no waiting at all (every call
// that cannot be granted at once fails). New panics if m < 0. Without this option
// the wait list is unbounded.
func WithMaxWaiters(m int) Option {
	return func(c *config) { c.maxWaiters, c.badMaxWaiters = m, m < 0 }
}

// noOptions is the config of every semaphore made without options.
var noOptions = config{maxWaiters: -1}

// newConfig applies opts to a fresh config. It is a function of its own so that
// New, without options, allocates nothing for one.
func newConfig(opts []Option) *config {
	c := &config{maxWaiters: -1}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithObserver sets the semaphore's observer; see Observer for when it is called.
// Without it (or with a nil o) nothing is reported, and the cost of observing is
// one nil check on the slow path only: the lock-free paths never look at it.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = o }
}

// WithHolderTracking records who holds the semaphore's units (see Diagnostics):
// the units, the age and the acquire site of every Units, and the label set on its
// context with ContextWithHolderLabel.
func WithHolderTracking() Option {
	return func(c *config) { c.tracking.holders = true }
}

// WithAcquireStacks records the full stack of every tracked acquire, for leak
// reports and LeakReport.Stack, instead of only its site. It implies
// WithHolderTracking and costs a stack walk per tracked acquire.
func WithAcquireStacks() Option {
	return func(c *config) { c.tracking.holders, c.tracking.stacks = true, true }
}

// WithLeakDetection calls report for every Units of the semaphore that becomes
// unreachable while it still holds units. It implies WithHolderTracking (add
// WithAcquireStacks for the acquire's stack). The report comes from the runtime's
// finalizer goroutine after a garbage collection has found the Units unreachable,
// so it may come late or, if the program exits first, never; report must not
// block. The units stay taken unless report calls LeakReport.Reclaim.
//
// Cost, only when on: that of holder tracking (see WithHolderTracking); the
// finalizer is there anyway. New panics if report is nil.
func WithLeakDetection(report func(LeakReport)) Option {
	return func(c *config) { c.tracking.leak, c.tracking.leakSet = report, true }
}

// WithWatchdog logs the Diagnostics dump at Warn level to logger (slog.Default()
// when nil, looked up at each dump) when the head waiter has waited longer than
// threshold, and again at most once per every while the stall lasts: a stall
// comes with many waiters, and one dump explains them. It implies
// WithHolderTracking, so that the dump names the holders.
//
// The watchdog starts no goroutine: it arms one timer while the wait list is not
// empty, and the timer's callback checks the head, logs after releasing the
// semaphore's lock, and re-arms while someone waits. New panics if threshold or
// every is not positive.
func WithWatchdog(threshold, every time.Duration, logger *slog.Logger) Option {
	return func(c *config) {
		c.tracking.watch = &watchdogSettings{threshold: threshold, every: every, logger: logger}
	}
}
