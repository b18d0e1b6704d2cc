package admission

import (
	"log/slog"
	"time"
)

// An Option configures a Controller: in New, or a group member in Group.Add.
type Option interface {
	applyController(*Controller)
}

// A GroupOption configures a Group in NewGroup.
type GroupOption interface {
	applyGroup(*Group)
}

// controllerOption is an Option that sets a field of the controller.
type controllerOption func(*Controller)

func (o controllerOption) applyController(c *Controller) { o(c) }

// groupOption is a GroupOption that sets a field of the group.
type groupOption func(*Group)

func (o groupOption) applyGroup(g *Group) { o(g) }

// NameOption is the option WithName returns. It is both an Option and a
// GroupOption, so one WithName names a controller in New and a group in
// NewGroup.
type NameOption string

func (n NameOption) applyController(c *Controller) { c.name = string(n) }
func (n NameOption) applyGroup(g *Group)           { g.name = string(n) }

// WithName names the controller (in New) or the group (in NewGroup), for error
// messages, dumps and metrics. Without it the name is "". A group member's name
// is Group.Add's name argument, so Add panics if given WithName.
func WithName(name string) NameOption { return NameOption(name) }

// WithMaxWaiters bounds the admission queue: a request that would be number n+1
// in it fails at once with an error matching semaphore.ErrQueueFull and counts as
// rejected (Stats.Rejected). n <= 0 (the default) leaves the queue unbounded.
func WithMaxWaiters(n int) Option { return controllerOption(func(c *Controller) { c.maxQueue = n }) }

// WithCPUConcurrency sets how many admitted permits may need CPU (NeedCPU minus
// Await) before admission stops: it is better to let a request finish using the CPU
// than to start one that competes with it. The default is 1; n must be at least 1.
func WithCPUConcurrency(n int) Option {
	return controllerOption(func(c *Controller) { c.cpuConcurrency = n })
}

// WithSerializeLimit sets the serialize limit to multiplier x the memory limit:
// past it admission stops and RequestMemory lets only one permit (the "blessed"
// one) keep growing while the others wait. 0 (the default) turns it off. New panics
// if multiplier is negative, infinite or NaN.
func WithSerializeLimit(multiplier float64) Option {
	return controllerOption(func(c *Controller) { c.serializeMult = multiplier })
}

// WithKillLimit sets the kill limit to multiplier x the memory limit: Consume and
// RequestMemory fail with ErrMemoryLimit rather than pass it. 0 (the default) turns
// it off. New panics if multiplier is negative, infinite or NaN.
func WithKillLimit(multiplier float64) Option {
	return controllerOption(func(c *Controller) { c.killMult = multiplier })
}

// WithShedFactor turns on preemptive shedding: a queued request whose context has a
// deadline fails with semaphore.ErrShed, instead of being admitted, when at the moment it would
// be admitted its remaining time is at most f x its whole budget (deadline minus
// arrival). It would likely time out anyway, after using resources. 0 (the default)
// turns it off; 1 (or more) sheds every request that had to queue. New panics if f
// is negative, infinite or NaN.
func WithShedFactor(f float64) Option {
	return controllerOption(func(c *Controller) { c.shedFactor = f })
}

// WithoutDeadlineShedding turns the deadline rule off (see the package
// documentation): a request that must queue waits as long as its context
// allows, and is admitted however little of its deadline is left.
func WithoutDeadlineShedding() Option {
	return controllerOption(func(c *Controller) { c.noDeadlineShed = true })
}

// WithLogger sends automatic diagnostics dumps (on a timed-out waiter, a full queue,
// and the kill limit) to logger at Warn level. Without it no dumps are logged.
func WithLogger(logger *slog.Logger) Option {
	return controllerOption(func(c *Controller) { c.logger = logger })
}

// WithDumpInterval sets the least time between two automatic diagnostics dumps;
// problems come in bursts, one dump explains them. The default is 30 seconds.
func WithDumpInterval(d time.Duration) Option {
	return controllerOption(func(c *Controller) { c.dumpEvery = d })
}

// A PermitOption configures one Acquire or Readmit.
type PermitOption func(*waiter)

// NotShed exempts the request from preemptive shedding and from the deadline
// rule.
func NotShed() PermitOption { return func(w *waiter) { w.noShed = true } }
