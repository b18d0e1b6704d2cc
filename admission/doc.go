// Package admission bounds several resources at once for a server's requests: how
// many run concurrently (count), the memory they use, and how many may be using the
// CPU, with a strict FIFO queue for the requests that cannot start, refusals when
// that queue is full or a request would likely time out anyway, eviction of
// idle requests' resources, and diagnostics that name the bottleneck. It follows the
// design of ScyllaDB's reader concurrency semaphore, with Go contexts for deadlines
// and cancellation.
//
//	ctrl := admission.New(admission.Resources{Count: 100, Memory: 64 << 20},
//		admission.WithName("reads"), admission.WithMaxWaiters(1000), admission.WithShedFactor(0.3))
//
//	err := ctrl.Do(ctx, "scan", estimate, func(ctx context.Context, p *admission.Permit) error {
//		done := p.NeedCPU() // this request competes for CPU from here
//		defer done()
//		return scan(ctx, p)
//	})
//
// # Admission
//
// Acquire asks for one count and the request's estimated memory. It is admitted at
// once only if all of these hold, in this order:
//
//  1. memory in use is not past the kill limit or the serialize limit;
//  2. fewer than the CPU concurrency (default 1) of active permits (admitted and
//     not parked) need CPU (NeedCPU held, not awaiting with Await): better to let
//     a request finish using the CPU than to start one that competes with it;
//  3. the resources suffice, or no count is in use at all ("always admit one":
//     otherwise a request larger than what is free would wait forever);
//  4. nobody is queued: the queue is strict FIFO, so a fitting newcomer never
//     overtakes a waiting request.
//
// Otherwise the request queues, and is admitted from the head as conditions allow.
// When the head is held back by count or memory (never when only CPU holds it),
// and evicting parked permits could let it in, they are evicted, oldest first,
// until it fits; in a group (see "Workload groups") that includes other members'
// parked permits that hold borrowed memory. A full queue (WithMaxWaiters) refuses
// a request at once with an error matching semaphore.ErrQueueFull; with
// WithShedFactor, a queued request that would be admitted with too little of its
// time budget left fails with semaphore.ErrShed instead. The first counts in
// Stats.Rejected, the second in Stats.Shed. A request whose
// context ends leaves the queue at once, and the requests behind it are admitted if
// they now fit.
//
// # Never served too late
//
// By default a request with a deadline (its context's, or one a door such as
// httpsem.Admit or grpcsem's interceptors gave it, with its wait bound) that
// would have to queue is refused at once with semaphore.ErrShed when its
// expected wait plus the usual round trip does not fit before its deadline (or
// its wait does not fit its wait bound), and a queued request that reaches the
// head with less of its deadline left than the usual round trip is shed there.
// The usual round trip is a smoothed mean of how long permits hold their count,
// from admission to Release or ReleaseBase (parked and evicted permits aside);
// the expected wait counts the requests queued ahead and this one, less the
// counts free or held by parked permits, at the count limit per round trip: a
// lower bound, since memory or the CPU may hold the queue longer, so a request
// refused on it could not have been served in time by count alone. This is the
// rule every door of the module shares (package adaptive describes it).
// Before any permit was released, nothing is refused on it. Both count in
// Stats.Shed. WithoutDeadlineShedding turns it off; NotShed exempts one
// request.
//
// # Errors
//
// The meanings admission shares with the rest of the module are the core's
// sentinels: a full queue matches semaphore.ErrQueueFull, a context deadline that
// passed while waiting semaphore.ErrTimedOut, and every refusal after Break
// semaphore.ErrBroken and Break's cause, and a request shed at the head
// semaphore.ErrShed. ErrMemoryLimit, ErrEvicted and ErrReleased are admission's
// own. Every error that ends a request carries its semaphore.Outcome, read with
// semaphore.OutcomeOf; ResultLabel names any result as a metric label.
//
// # Shutdown
//
// Break, then Drain, as for the core semaphore. Break stops admission: queued
// requests fail, later ones fail at once, parked permits are evicted (and a
// permit parked later is evicted at once), and Track returns released permits.
// Drain waits until every permit is released; it does not stop admission by
// itself.
//
// # After admission
//
// A Permit accounts what its request uses. Consume takes resources already spent
// (never blocks; fails past the kill limit); RequestMemory takes memory and, past
// the serialize limit, lets only one "blessed" permit grow while the others wait.
// NeedCPU and Await mark what the request is waiting for. ReleaseBase gives back the
// admission slot early; Release gives back everything.
//
// An idle permit can be parked (Park) with the value its work would resume with:
// its resources may be reclaimed by eviction, which closes the value. Resume takes
// it back, or reports that it was evicted, in which case Readmit gets new base
// resources through the queue.
//
// # Parked and evicted permits
//
// A parked (Inactive) or evicted permit is not running, so it holds nobody back
// for CPU: its NeedCPU and Await marks are kept on the permit but do not count
// against the CPU concurrency (nor in Stats.NeedCPUPermits) until Resume or Readmit
// makes it active again, when they count again. Marks may be taken and ended while
// parked. Parking fails every memory request the permit has pending (ErrEvicted) and
// drops its blessing. While parked, evicted or being readmitted, Consume and
// RequestMemory fail with ErrEvicted and take nothing, and Park fails with
// ErrEvicted: only an active permit (or one waiting for memory) can be parked.
//
// # Released permits
//
// Release is terminal, and checked at every entry point. It gives back everything,
// fails the permit's pending memory requests and readmission with ErrReleased,
// unregisters it if parked (closing the value) and drops its CPU marks for good.
// Afterwards State is Released and Consumed zero; Consume, RequestMemory, Park and
// Readmit fail with ErrReleased and take nothing; NeedCPU and Await count nothing
// and return a function that does nothing (so do the functions of marks taken
// before Release); Return, ReleaseBase and Release do nothing.
//
// # Workload groups
//
// A Group runs one controller per workload over one memory budget, as ScyllaDB
// runs one semaphore per workload-prioritization group:
//
//	g := admission.NewGroup(admission.Resources{Count: 100, Memory: 64 << 20}, admission.WithName("reads"),
//		admission.WithSharedPool(0.25))
//	interactive := g.Add("interactive", 3) // a full *Controller
//	batch := g.Add("batch", 1, admission.WithMaxWaiters(50))
//
// The rules:
//
//   - Split. A fraction of the memory (WithSharedPool; default 0) is the shared
//     pool; the rest is split between the members in proportion to their shares,
//     rounded down, and what rounding leaves goes to the pool, so the shares and
//     the pool always add up to the total. A member's memory limit is its share;
//     its count limit is the group's Count. Every Controller rule applies to each
//     member on its own: FIFO, CPU, shedding, parking, "always admit one".
//   - Borrowing. A request that does not fit what is left of its member's share
//     may borrow the rest from the pool. A member borrows whatever it holds
//     beyond its share, however it came to hold it (admission, Consume,
//     RequestMemory, a re-split): borrowing is computed from use, not recorded,
//     so memory goes back to the pool the moment the borrower gives it back.
//     "Always admit one" may take a member past its share plus the pool; what
//     the members borrow can then exceed the pool until it is given back.
//   - No starvation. A member's share is never lent: a request that fits its
//     share is admitted whatever other members borrow. For the pool, the heads
//     of the members' queues that wait only for memory ("claimants") are ranked
//     by what their member borrows per share, least first, then by arrival, and
//     only the first may borrow: a member within its share (borrowing nothing)
//     gets the pool ahead of every borrower, and saturated borrowers share it in
//     proportion to their shares. A claimant holds the pool against the ones
//     ranked after it, even when a smaller request would fit, as the FIFO queue
//     does against a large request's starvation. A request the pool could never
//     cover is no claimant and holds nothing back.
//   - Eviction for the pool. A member's parked permits can hold the pool
//     against every other member. When the claimant ranked first is held back by
//     the pool alone (never by CPU, count or a limit) and its own member's parked
//     permits could not let it in, other members' parked permits are evicted,
//     oldest first by park order across the group, just as many as let it in, in
//     one hold of the lock; if no such run lets it in, none is. Only a permit
//     whose base memory is all borrowed (its member holds at least that much
//     beyond its share, after the evictions before it) is taken, so a member's
//     memory within its share is never taken back for another member; a parked
//     permit larger than what its member borrows waits for Resume, its TTL or
//     its own member's eviction.
//   - Limits. A member's serialize and kill limits are taken of what it may hold
//     with borrowing: multiplier x (share + pool).
//   - Wakeups. Whatever gives memory back, in any member, re-runs admission for
//     every member until nothing more can be admitted, in one hold of the lock;
//     so does whatever changes who claims the pool or ranks first for it (a member
//     taking memory, which raises what it borrows and may leave its own head
//     needing more than the pool has, so no claimant; a Resume whose CPU marks
//     count again; Break failing a head):
//     what fits a share is admitted at once, and the pool goes claimant by
//     claimant in the order above.
//   - Live changes. SetShares, SetTotal, Add and Remove re-split at once and take
//     nothing back. A member left over its new share holds the excess as
//     borrowed: it admits nothing more until it is back under its share or the
//     pool can lend. Until then the group as a whole may hold more than its total.
//     Remove breaks the member (as Break does); its permits keep what
//     they hold, all of it borrowed, and it leaves the group once they are
//     released. SetLimits panics on a member.
//   - Observation. Stats.Borrowed is a member's borrowing; Group.Stats gives
//     every member's stats, the pool and what is lent, and names the bottleneck
//     member (the one with the most requests queued); Group.Diagnostics dumps
//     the group and every member.
//
// Locking: the members of a group share the group's one mutex (a Controller's
// lock is a pointer, set before the controller is published). Any decision that
// reads several members (what the pool has left, who ranks first) is therefore
// made and acted on in one hold of the one lock that guards every piece of state
// it reads, and with a single lock there is no lock order to invert. The cost is
// that members of one group do not run their critical sections in parallel.
//
// # Edge cases
//
//   - Preemptive shedding is checked at the moment a queued request would be
//     admitted, and only for requests with a context deadline; NotShed exempts
//     one from it and from the deadline rule. A deadline that has already
//     passed is the caller's own: the request times out rather than being shed.
//   - Eviction releases a parked permit's base resources; memory it consumed stays
//     accounted to it until returned or released.
//   - Releasing a parked permit unregisters it and closes its value.
//   - Track after Break (or Group.Remove) returns a permit that is already
//     released, so that nothing is held once Drain has returned.
//   - A shed request's error matches semaphore.ErrShed, which also matches
//     semaphore.ErrQueueFull: a full queue and preemptive shedding are both
//     refusals for load, so one check catches both, and
//     errors.Is(err, semaphore.ErrShed) tells a shed request apart.
//     ErrMemoryLimit, ErrEvicted and ErrReleased match no shared sentinel: the
//     kill limit is not a capacity the request exceeds, and the other two are
//     about the permit, not the controller's load.
//   - Names and options are shared across the module: WithName (one option
//     accepted by both New and NewGroup; it is a NameOption, which is both an
//     Option and a GroupOption), WithMaxWaiters, and Break then Drain for
//     shutdown. Group.Add keeps the member's name as an argument, because it is
//     the member's identity in the group; Add panics if given WithName.
//   - A zero Controller or Group (not made by New, Group.Add or NewGroup)
//     panics at its first use with a message saying to use New or NewGroup: it
//     has no limits to apply, and failing every call would hide the mistake.
//   - The largest values mean "no limit" and work as such: limits of
//     math.MaxInt64, WithMaxWaiters and WithCPUConcurrency of math.MaxInt, the
//     largest finite multipliers and durations. Amounts are int64 and exact as
//     long as what the permits hold in total fits in an int64.
//   - How a request ended is the Outcome recorded when its error was made, not
//     the sentinels the error matches: a request whose context was cancelled
//     with a broken controller's error as its cause is Cancelled, in its error,
//     in Stats and in ResultLabel, not Broken.
//   - A permit may have several RequestMemory calls waiting at once (several
//     goroutines may serve one request); they are granted in FIFO order with
//     everyone else's, the permit is WaitingForMemory while any is pending, and
//     Park and Release fail all of them. Nothing is granted to a permit that is not
//     active. While waiting for memory a permit is admitted, so its CPU marks count.
//   - Readmit decides and acts in one critical section, so of two concurrent calls
//     on an evicted permit exactly one takes the base: the other fails with
//     ErrEvicted ("already being readmitted") while the first waits, or returns nil
//     once it has succeeded. Readmit on an active or parked permit returns nil.
//   - A request granted while its context is already done (a cancellation
//     before the grant, or one racing it) fails with the context's error and
//     gives the grant back, so that the requests behind are admitted as if it had
//     never queued, as in the core semaphore; Readmit is the exception: it keeps
//     such a grant and returns nil, because the permit is shared and other
//     goroutines may already be using it once it is active.
//   - A readmitted or resumed permit's marks count again even if that puts the
//     count of CPU-bound permits past the CPU concurrency: admission stops until
//     it falls back, as for marks taken by admitted permits.
//   - Park on a permit that is not active returns an error (ErrEvicted, or
//     ErrReleased) rather than panicking: with permits shared between goroutines it
//     is a runtime condition. Park on another controller's permit panics.
//   - Errors have the module's one shape: they match their sentinels (and the
//     context's errors) with errors.Is, and read
//     `admission "<name>": <op> "<request>" (memory <n>): <reason>`, e.g.
//     `admission "reads": admit "scan" (memory 128K): wait queue full (...)`.
//     An unnamed controller is named by its address ("unnamed admission
//     0x…"), as the core names an unnamed semaphore, so that messages about
//     two of them can be told apart.
//   - The dump names CPU as a bottleneck only while some permit needs CPU without
//     awaiting: permits that await I/O do not hold admission back.
//   - A Controller uses one mutex, and every decision and the action it guards
//     happen in one hold of it; every read of its state, for messages and dumps
//     too, happens under it. User code (OnEvict, closing values, logging) runs only
//     after it is released.
package admission
