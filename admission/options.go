package admission

import (
	"log/slog"
	"time"
)

// An Option configures a Controller at construction.
type Option func(*Controller)

// WithMaxQueueLength bounds the admission queue: a request that would be number
// n+1 in it fails at once with ErrQueueFull and counts as shed. n <= 0 (the default)
// leaves the queue unbounded.
func WithMaxQueueLength(n int) Option { return func(c *Controller) { c.maxQueue = n } }

// WithCPUConcurrency sets how many admitted permits may need CPU (NeedCPU minus
// Await) before admission stops: it is better to let a request finish using the CPU
// than to start one that competes with it. The default is 1; n must be at least 1.
func WithCPUConcurrency(n int) Option { return func(c *Controller) { c.cpuConcurrency = n } }

// WithSerializeLimit sets the serialize limit to multiplier x the memory limit:
// past it admission stops and RequestMemory lets only one permit (the "blessed"
// one) keep growing while the others wait. 0 (the default) turns it off. New panics
// if multiplier is negative, infinite or NaN.
func WithSerializeLimit(multiplier float64) Option {
	return func(c *Controller) { c.serializeMult = multiplier }
}

// WithKillLimit sets the kill limit to multiplier x the memory limit: Consume and
// RequestMemory fail with ErrMemoryLimit rather than pass it. 0 (the default) turns
// it off. New panics if multiplier is negative, infinite or NaN.
func WithKillLimit(multiplier float64) Option {
	return func(c *Controller) { c.killMult = multiplier }
}

// WithShedFactor turns on preemptive shedding: a queued request whose context has a
// deadline fails with ErrShed, instead of being admitted, when at the moment it would
// be admitted its remaining time is at most f x its whole budget (deadline minus
// arrival). It would likely time out anyway, after using resources. 0 (the default)
// turns it off; 1 (or more) sheds every request that had to queue. New panics if f
// is negative, infinite or NaN.
func WithShedFactor(f float64) Option { return func(c *Controller) { c.shedFactor = f } }

// WithLogger sends automatic diagnostics dumps (on a timed-out waiter, a full queue,
// and the kill limit) to logger at Warn level. Without it no dumps are logged.
func WithLogger(logger *slog.Logger) Option { return func(c *Controller) { c.logger = logger } }

// WithDumpInterval sets the least time between two automatic diagnostics dumps;
// problems come in bursts, one dump explains them. The default is 30 seconds.
func WithDumpInterval(d time.Duration) Option { return func(c *Controller) { c.dumpEvery = d } }

// A PermitOption configures one Acquire or Readmit.
type PermitOption func(*waiter)

// NotShed exempts the request from preemptive shedding.
func NotShed() PermitOption { return func(w *waiter) { w.noShed = true } }
