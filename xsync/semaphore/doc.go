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
//     granted if they now fit. A call granted while its context is already done
//     (cancelled before the Release that granted it, or racing it) returns
//     ctx.Err() and hands the units on to the waiters behind, as x/sync does.
//   - TryAcquire never blocks and never jumps the queue.
//   - Release panics when it would release more than is held.
//   - Every size from 0 to math.MaxInt64 is counted exactly, unit for unit, and
//     requests and releases may be split any way x/sync accepts: an Acquire(2)
//     may be given back as two Release(1), three Acquire(1) as one Release(3).
//   - The zero Weighted is a semaphore of size 0, as in x/sync: it grants only
//     n = 0, and a larger request waits for its context.
//
// # Sizes, and what is faster
//
// A size up to the core's MaxUnits (2^44-1, about 1.8e13) runs on the core,
// which counts it exactly: its uncontended Acquire and Release are one atomic
// operation each instead of a mutex lock and unlock, and a blocked Acquire
// allocates nothing with a context that is never done and one channel otherwise
// (its wait-list nodes are pooled), where x/sync allocates a list element and a
// channel. The benchmarks in bench_test.go run both side by side.
//
// A larger size, such as math.MaxInt64 used to mean "no limit", and the zero
// Weighted run on an exact count kept by this package under a mutex, with its
// own FIFO list of waiters and x/sync's rules, at about x/sync's speed (a
// blocked Acquire allocates its list node and a channel). The core cannot count
// such a size, and no scaling of it to the core's range is exact: counting in
// blocks of several units rounds, and the rounding of calls split differently
// does not add up.
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
// # Where it says more than x/sync
//
// x/sync leaves these cases undocumented; this package answers them:
//
//   - NewWeighted panics for a negative size, and Acquire, TryAcquire and
//     Release panic for a negative n. x/sync accepts them and corrupts its
//     count (a negative Acquire creates units).
//   - Release's panic on over-release happens before anything changes, so the
//     semaphore stays usable by whoever recovers; x/sync's count is already
//     wrong when it panics. The panic message names the semaphore (the core's,
//     or the size on the exact path) and the value instead of x/sync's fixed
//     "semaphore: released more than held".
//   - When a waiter at the head of the queue gives up while every unit is
//     taken, the n = 0 waiters right behind it are granted at once, on both
//     paths. x/sync looks at the queue only when units are free, so they stay
//     blocked until the next Release.
//   - The zero Weighted is usable, as x/sync's is, rather than a panic that
//     names NewWeighted: it costs the core's path nothing, since the check that
//     sends a Weighted without a core to the exact path is the one that sends
//     sizes above MaxUnits there.
//   - The paths part at the core's MaxUnits, not lower: the core compares a
//     Release's n with what is out before adding it, so a Release of any n is
//     safe at every size the core can hold.
package semaphore
