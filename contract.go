package semaphore

import (
	"context"
	"time"
)

// Interface is the contract every semaphore-shaped type of this module keeps,
// in the core's words, so that a capability can be built over any of them: a
// keyed set's second level, a limiter's gate, a pool of leased blocks. *Semaphore
// is the model; a type that implements Interface promises what the Semaphore's
// methods of the same names promise:
//
//   - TryAcquire takes n units if they are free and nobody waits, and never
//     blocks or jumps the queue.
//   - Acquire waits for n units in the type's order, and fails, taking
//     nothing, when ctx ends (an error matching ctx.Err(), and ErrTimedOut for
//     a deadline), when broken (ErrBroken), when n exceeds the capacity
//     (ErrTooLarge) or when the queue is full (ErrQueueFull); the error
//     carries its Outcome (OutcomeOf). A grant that races a cancellation is
//     given back, so that a cancellation that came first always wins.
//   - AcquireTimeout is Acquire with a timeout instead of a context; d <= 0
//     never waits.
//   - Release gives back n units taken by the calls above; it never blocks.
//   - Resize changes the capacity without revoking holders.
//   - Break fails every waiter and every later acquire with ErrBroken and err.
//   - Reading reads the state and counters, true at every edge (see Reading).
//
// Implementations may add more (a name, Drain, Units, Stats of their own).
type Interface interface {
	TryAcquire(n int64) bool
	Acquire(ctx context.Context, n int64) error
	AcquireTimeout(d time.Duration, n int64) error
	Release(n int64)
	Resize(capacity int64)
	Break(err error)
	Reading() Reading
}

var _ Interface = (*Semaphore)(nil)
