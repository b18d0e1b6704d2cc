// Package keyed limits concurrency per key, under an optional limit shared by
// all keys: "at most 4 concurrent uploads per user, at most 256 in all, shared
// fairly among the users who want them".
//
//	uploads := keyed.New(4, keyed.WithName("uploads"), keyed.WithLimit(256))
//
//	u, err := uploads.Acquire(ctx, user, 1)
//	if err != nil {
//		return err // says which set, which key, what was asked and why it failed
//	}
//	defer u.Release()
//
// A set with a shared limit and no limit per key is New(NoKeyLimit,
// WithLimit(n)). AcquireInto is Acquire into a Units the caller keeps, and
// allocates nothing.
//
// Each active key has its own semaphore from the core package (semaphore.New),
// so per-key semantics are the core's: strict FIFO, weighted requests, the
// errors and Break. A key's entry is in the set only while it has calls in
// progress or Units not released, so memory follows the keys active now, not
// every key ever seen, and no sweeper goroutine is needed; a few idle entries,
// with their semaphores, are kept for keys that become active. A call on a key
// that is already active takes no lock: it finds the key's entry without one
// and takes a reference with one compare-and-swap on the entry, so calls on
// different keys share nothing they write.
//
// # Two levels, one order
//
// Acquire takes the key's units first, then the second level's: the set's own
// limit (WithLimit) or a semaphore shared with other code (WithGlobal), not
// both. Release gives back the second level's units, then the key's. A call
// that fails at either level returns holding nothing. The two levels are
// joined through the core's contract: the second level is reached through the
// acquire methods of semaphore.Interface, as each key sees it.
//
// No deadlock: every call waits for the two levels in the same order, key then
// second, and never waits for a key while it holds the second level's units.
// The wait-for graph has no cycle, as long as no holder of Units waits for more
// units of the set while it holds them (the rule for any two semaphores). A
// call reaches the second level only once it holds its key's units, so one key
// has at most its capacity's worth of calls there, however many wait at its
// own semaphore.
//
// # Fair shares of the limit
//
// With WithGlobal, the second level is the shared semaphore's FIFO order: a
// key that sends more calls gets more of it. With WithLimit, the set decides
// who gets each unit:
//
//   - Units nobody waits for are granted at once, to whoever asks: a key's
//     unused share is lent without delay.
//   - While calls wait at the limit, each grant goes to the head of the line of
//     one key: first a key holding less than its guarantee (WithGuaranteeFunc);
//     then the key with the earliest start tag; then the key whose call has
//     waited longest. The chosen call is granted when its units are free; until
//     then nobody else is, so that a large request is not starved by small ones
//     of other keys.
//   - Each key's calls are served in the order they reached the limit, a large
//     one at the head holding up the key's smaller ones behind it.
//   - A request for 0 units follows the same order, as in the core: while calls
//     wait at the limit it waits for its key's turn, and after a shrinking
//     Resize until the units held are within the limit.
//   - Nothing held is ever taken back. The units held by all keys never exceed
//     the limit; after a shrinking Resize no call is granted until they are
//     below the new one.
//
// The start tags are those of weighted fair queuing, counted in units granted:
// a grant of n units to a key of weight w (WithWeightFunc) starts at the key's
// start tag, moves the set's virtual time to it if it is later, and moves the
// key's virtual time to that start plus n/w. A key's start tag is its virtual
// time, but no earlier than the limit's units, over its weight, before the
// set's virtual time. So keys that all want more than their shares are granted
// units in proportion to their weights, and, when their calls hold units for
// alike durations, hold units in that proportion over time. Units count by
// size: a call for 3 units advances its key three times as far as a call for
// 1.
//
// A key that was served less than its share while it asked for nothing at the
// limit is owed what it missed, up to a limit's worth of units: its calls may
// have waited at its own level behind its own holders (a key of capacity 8
// holding 3 units and asking for 7 more), where the limit cannot see them, or
// it may have had no call for a while. A key that was served more pays it
// back. A key made active anew starts at the set's virtual time: it owes
// nothing and is owed nothing. A key is active while it holds or waits for
// units, so a light key that pauses until it holds nothing loses what it was
// owed: its next calls, when several queue, take turns with a backlogged key's
// rather than going first. Grants made while nobody waits at the limit
// advance nothing, and a grant given back because the call's context ended as
// it was made moves its key's virtual time back.
//
// Ordering by start tags rather than by the units each key holds now makes
// the shares exact over time when the limit is small: a limit of 8 split 1:4
// cannot be held as 1.6 and 6.4 units; ranked by units held it settles at 2 and
// 6 (a 25% share for a 20% weight), while grants by start tags go 1 to 4 and
// the units held average 1.6 and 6.4.
//
// The guarantee's bound: when a key below its guarantee is the only one with
// calls waiting at the limit, its calls that fit in what it lacks are granted
// once as many units as they ask for have been released by any key (fewer if
// some are free when it asks; more after a shrinking Resize, by the units held
// above the new limit). With several keys below their guarantees, they are
// served among themselves by weight before any other, so the wait is bounded
// by what they lack together, as long as the guarantees of the keys with calls
// waiting sum to at most the limit.
//
// Choosing the next key costs O(keys with calls waiting at the limit), under
// the limit's mutex, once per grant made while anyone waits. Whether a key is
// below its guarantee is read from its units granted at that moment; a call
// granted or released on the lock-free path an instant before the first call
// queued may be counted an instant late.
//
// # Keys, capacities and errors
//
// Keys are strings; other keys convert at the call (strconv.Itoa). New and the
// functions of WithCapacityFunc, WithWeightFunc and WithGuaranteeFunc panic for
// values out of range, with a message naming the set, the key and the value. A
// capacity above semaphore.MaxUnits (NoKeyLimit for "no per-key limit") is
// taken as MaxUnits. Capacity 0 admits only requests for 0 units, so a capacity
// function can block keys. A request larger than its key's capacity, the limit
// or the global capacity fails with an error matching semaphore.ErrTooLarge. A
// key's capacity, weight and guarantee are fixed while it is active: the
// functions are called when the key becomes active, without a lock of the set,
// so they may run concurrently and, in a race, more than once for a key.
//
// Errors read `keyed "NAME": acquire N units for key "KEY": WHY` and carry the
// call's semaphore.Outcome, which semaphore.OutcomeOf reads and by which Stats
// counts: a call whose context was cancelled is Cancelled whatever its cause
// matches. They match the core's sentinels, the context's error and cause, and
// Break's cause. The package has no sentinels of its own.
//
// Break breaks the global semaphore of WithGlobal too, for every other user of
// it. Drain waits for the set's own holders only. WithMaxWaiters bounds each
// key's wait list. The Observer hears the key level, and the calls Break
// refuses. Units cannot be split, returned in part, merged or detached, since
// its two levels are given back together.
package keyed
