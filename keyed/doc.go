// Package keyed limits concurrency per key, optionally under a global limit
// shared by all keys: "at most 4 concurrent uploads per user, at most 256 in
// all".
//
//	global := semaphore.New(256, semaphore.WithName("uploads"))
//	uploads := keyed.New(4, keyed.WithName("uploads"), keyed.WithGlobal(global))
//
//	u, err := uploads.Acquire(ctx, user, 1)
//	if err != nil {
//		return err // says which set, which key, what was asked and why it failed
//	}
//	defer u.Release()
//
// Each active key has its own semaphore from the core package (semaphore.New),
// so per-key semantics are the core's: strict FIFO, weights, the errors and
// Break. The keys live in a map under one mutex, with a reference count per key
// (calls in progress plus Units not released); a key's entry leaves the map in
// the same hold of the lock that drops its last reference, so memory follows
// the keys active now, not every key ever seen, and no sweeper goroutine is
// needed. A caller that finds an entry under the lock always finds a live one.
//
// # Two levels, one order
//
// Acquire takes the key's units first, then the global semaphore's, each in
// FIFO order; Release gives back the global units, then the key's. A call that
// fails at either level returns holding nothing: units it got at the key level
// are given back before it returns.
//
// No deadlock: every call waits for the two levels in the same order, key then
// global, and never waits for a key while it holds global units. A caller
// waiting at a key waits for that key's holders, which either run the caller's
// code or wait at the global level; one waiting at the global level waits for
// global holders, which wait for nothing in the set. The wait-for graph has no
// cycle, as long as no holder of Units waits for more units of the set while it
// holds them (the rule for any two semaphores).
//
// No starvation beyond the global queue's FIFO order: a call enters the global
// queue only once it holds its key's units, so one key has at most its
// capacity's worth of calls queued or holding at the global level. A light key's
// call that reaches the global queue is granted after the calls ahead of it, of
// which a heavy key contributes at most its capacity, however many of its calls
// wait at its own semaphore.
//
// # Decisions where the issue left room
//
//   - Keys are strings, not a generic comparable type: tenants, users and
//     client addresses are strings; errors and Diagnostics quote them; and a
//     generic Set would make every option generic, which Go cannot infer from
//     the option's arguments (keyed.WithName[string]("x")). Other keys convert at
//     the call (strconv.Itoa).
//   - Capacities: New and the function of WithCapacityFunc panic for a
//     negative capacity, with a message naming the set, the key and the value;
//     one above semaphore.MaxUnits (math.MaxInt64 for "no per-key limit") is
//     taken as MaxUnits, as netsem.LimitListener takes a huge n: no process
//     holds 2^44 of anything. Capacity 0 is allowed: such a key
//     admits only requests for 0 units, so a capacity function can block keys.
//     A request larger than its key's capacity fails with an error matching
//     semaphore.ErrTooLarge, as one larger than the global capacity does.
//   - A key's capacity is fixed while the key is active: the capacity function is
//     called when the key becomes active (without the set's lock, so it may
//     run concurrently and, in a race, more than once for a key) and again only
//     when the key becomes active anew.
//   - Errors read `keyed "NAME": acquire N units for key "KEY": WHY`, where WHY
//     is the core's reason (with `global semaphore "G": ` before it when the
//     global level refused), and wrap the core's error, so errors.Is matches the
//     core's sentinels, the context's error and cause, and Break's cause.
//     The package has no sentinels of its own.
//   - A negative n, a nil option and the zero Set panic.
//   - Break breaks the global semaphore too, for every other user of it. Calls
//     made after Break fail as the core's do after Break: a done context first,
//     then broken. Drain waits for the set's own holders only.
//   - WithMaxWaiters bounds each key's wait list; the global semaphore's is its
//     owner's to bound.
//   - The Observer hears the key level only; the global semaphore has its own.
//   - Units is smaller than the core's: it cannot be split, returned in part,
//     merged or detached, since its two levels must be given back together.
//   - Up to 64 idle key entries, with their semaphores, are kept for reuse, so a
//     stream of short-lived keys allocates nothing per key but the Units; the
//     map is rebuilt when it falls to an eighth of its peak, since Go maps never
//     give back the memory of deleted entries.
package keyed
