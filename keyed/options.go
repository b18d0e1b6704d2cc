package keyed

import (
	"fmt"

	"github.com/fairsem/semaphore"
)

// An Option configures a Set at construction. Options are applied in order; a
// later one overrides an earlier one of the same kind.
type Option func(*config)

// config is what the options set; New copies it into the Set.
type config struct {
	name        string
	capacityOf  func(key string) int64
	weightOf    func(key string) int64
	guaranteeOf func(key string) int64
	global      *semaphore.Semaphore
	limit       int64 // -1: none
	maxWaiters  int   // -1: unbounded
	observer    Observer
}

// WithName names the set. The name appears in every error and panic message, in
// Stats and in Diagnostics.
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// WithCapacityFunc overrides the capacity of some keys: f is called with a key
// when the key becomes active (its first holder or waiter arrives), and its
// result is the key's capacity for as long as the key stays active (above
// semaphore.MaxUnits it is taken as MaxUnits); f should
// return the default capacity for keys it does not override. f is called without
// the set's lock, so it may call the Set, but it may run concurrently and, when
// two calls make a key active at once, more than once for one activation (one
// result is used): it should be a quick, pure function of the key. A result
// below zero makes the call that asked for it panic.
// WithCapacityFunc panics if f is nil.
func WithCapacityFunc(f func(key string) int64) Option {
	if f == nil {
		panic("keyed: WithCapacityFunc(nil)")
	}
	return func(c *config) { c.capacityOf = f }
}

// WithGlobal makes every acquisition also take its units from global, a
// semaphore shared by all keys (and possibly by other code), after the key's
// units, in global's FIFO order. Break on the set breaks global too.
// WithGlobal panics if global is nil.
func WithGlobal(global *semaphore.Semaphore) Option {
	if global == nil {
		panic("keyed: WithGlobal(nil)")
	}
	return func(c *config) { c.global = global }
}

// WithLimit gives the set a limit of its own on the units held by all keys
// together, shared among the keys that want it in the order the package
// documentation describes: weighted fair queuing (WithWeightFunc), guaranteed
// minimums (WithGuaranteeFunc), units not in use lent at once. The limit is
// hard: the units held never exceed it. Resize changes it. A limit above
// semaphore.MaxUnits is taken as MaxUnits. It excludes WithGlobal: New panics
// if both are given. WithLimit panics if n is negative.
//
// For a limit shared by keys that have no limit of their own, give New the
// capacity NoKeyLimit: New(NoKeyLimit, WithLimit(n)).
func WithLimit(n int64) Option {
	if n < 0 {
		panic(fmt.Sprintf("keyed: WithLimit(%d): negative", n))
	}
	return func(c *config) { c.limit = n }
}

// WithWeightFunc gives keys weights for sharing the limit of WithLimit: while
// calls wait at the limit, keys that all want more are granted units in
// proportion to their weights (the package documentation gives the order). A key's weight is f(key), called as WithCapacityFunc's function
// is, when the key becomes active; without this option every key weighs 1. A
// weight outside 1 to MaxWeight makes the call that asked for it panic. New
// panics if the set has no limit (WithLimit); WithWeightFunc panics if f is
// nil.
func WithWeightFunc(f func(key string) int64) Option {
	if f == nil {
		panic("keyed: WithWeightFunc(nil)")
	}
	return func(c *config) { c.weightOf = f }
}

// WithGuaranteeFunc gives keys a guaranteed minimum of the limit of WithLimit:
// f(key) units, called as WithCapacityFunc's function is, when the key becomes
// active (at most the key's capacity; 0 without this option). While a key holds
// less than its guarantee and has calls waiting at the limit, units released
// by any key go to it before any key at or above its guarantee, until it holds
// its guarantee; when it does not want them, they are lent to others. The
// package documentation states how long a key waits for its guarantee. A
// negative guarantee makes the call that asked for it panic. New panics if the
// set has no limit (WithLimit); WithGuaranteeFunc panics if f is nil.
func WithGuaranteeFunc(f func(key string) int64) Option {
	if f == nil {
		panic("keyed: WithGuaranteeFunc(nil)")
	}
	return func(c *config) { c.guaranteeOf = f }
}

// WithMaxWaiters bounds each key's wait list, as semaphore.WithMaxWaiters does
// for one semaphore: a call that would become the key's waiter number m+1 fails
// at once with an error matching semaphore.ErrQueueFull. m = 0 allows no waiting
// at the key level. The global level is bounded, if at all, by the global
// semaphore's own option. WithMaxWaiters panics if m < 0.
func WithMaxWaiters(m int) Option {
	if m < 0 {
		panic(fmt.Sprintf("keyed: WithMaxWaiters(%d): negative", m))
	}
	return func(c *config) { c.maxWaiters = m }
}

// WithObserver sets the set's observer; see Observer. WithObserver panics if o is
// nil.
func WithObserver(o Observer) Option {
	if o == nil {
		panic("keyed: WithObserver(nil)")
	}
	return func(c *config) { c.observer = o }
}
