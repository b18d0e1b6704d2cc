// Package semaphore is a drop-in replacement for golang.org/x/sync/semaphore,
// built on the strict-FIFO semaphore of github.com/fairsem/semaphore.
//
// Migrating is a change of import path and nothing else:
//
//	import "golang.org/x/sync/semaphore"
//
// becomes
//
//	import "github.com/fairsem/semaphore/xsync/semaphore"
//
// and every call site (semaphore.NewWeighted, Acquire, TryAcquire, Release) keeps
// compiling and keeps its meaning. The package is named semaphore, like the one it
// replaces, for that reason; the directory xsync says what it is compatible with.
//
// # What is the same
//
// The contract is x/sync's, documented method by method on Weighted:
//
//   - Acquire blocks until n units are free and nobody waits ahead, or ctx is
//     done. On failure it returns exactly ctx.Err() (context.Canceled or
//     context.DeadlineExceeded, comparable with ==) and leaves the semaphore
//     unchanged. A context already done fails even when units are free.
//   - A request larger than the size never queues: it blocks until ctx is done
//     and returns ctx.Err(), without holding back anyone else.
//   - Waiters are served in strict FIFO order: a large request at the head holds
//     back the smaller ones behind it, so it is never starved.
//   - A waiter whose context ends leaves the queue, and the waiters behind it are
//     granted if they now fit. When the grant and the cancellation race, Acquire
//     returns ctx.Err() and the units are handed on.
//   - TryAcquire never blocks and never jumps the queue.
//   - Release panics when it would release more than is held.
//
// # What is faster
//
// The core's uncontended Acquire and Release are one atomic operation each
// instead of a mutex lock and unlock, and a blocked Acquire allocates nothing
// with a context that is never done and one channel otherwise (its wait-list
// nodes are pooled), where x/sync allocates a list element and a channel. The
// benchmarks in bench_test.go run both side by side.
//
// # When to move to the full API
//
// This package keeps x/sync's surface on purpose, so it cannot say more than
// x/sync does. Use github.com/fairsem/semaphore directly when you want errors
// that name the semaphore and the reason (and match ErrTimedOut, ErrQueueFull,
// ErrBroken with errors.Is), Break for shutdown, AcquireTimeout without a
// context, a bounded wait list (WithMaxWaiters), Resize, Consume, Stats, or
// Units that release themselves idempotently.
//
// # Deliberate differences from x/sync
//
// x/sync leaves these cases undocumented; this package takes a side:
//
//   - NewWeighted panics for a negative size, and Acquire, TryAcquire and
//     Release panic for a negative n. x/sync accepts them and corrupts its
//     count (a negative Acquire creates units).
//   - Release's panic on over-release happens before anything changes, so the
//     semaphore stays usable by whoever recovers; x/sync's count is already
//     wrong when it panics. The panic message names the core semaphore and the
//     value instead of x/sync's fixed "semaphore: released more than held".
//   - Sizes up to half the core's MaxUnits (2^44-1, about 1.7e13) are
//     accounted exactly. A larger size, such as math.MaxInt64 used to mean "no
//     limit", is accounted in blocks of ceil(size/(2^44-1)) units, each request
//     rounded up to whole blocks. Acquire(size) still excludes everyone else and n = 0 still costs
//     nothing; only sums of requests within one block of the size can be
//     decided differently from x/sync (granted or made to wait).
//   - When a waiter at the head of the queue gives up while every unit is
//     taken, the n = 0 waiters right behind it are granted at once. x/sync
//     looks at the queue only when units are free, so they stay blocked until
//     the next Release.
//   - A Weighted must be created with NewWeighted; its zero value is not usable
//     (x/sync's zero value is a semaphore of size 0, which admits only n = 0).
package semaphore
