// Package admission bounds several resources at once for a server's requests: how
// many run concurrently (count), the memory they use, and how many may be using the
// CPU, with a strict FIFO queue for the requests that cannot start, load shedding
// when that queue is too long or a request would likely time out anyway, eviction of
// idle requests' resources, and diagnostics that name the bottleneck. It follows the
// design of ScyllaDB's reader concurrency semaphore, with Go contexts for deadlines
// and cancellation.
//
//	ctrl := admission.New("reads", admission.Resources{Count: 100, Memory: 64 << 20},
//		admission.WithMaxQueueLength(1000), admission.WithShedFactor(0.3))
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
//  2. fewer than the CPU concurrency (default 1) of admitted permits need CPU
//     (NeedCPU held, not awaiting with Await): better to let a request finish
//     using the CPU than to start one that competes with it;
//  3. the resources suffice, or no count is in use at all ("always admit one":
//     otherwise a request larger than what is free would wait forever);
//  4. nobody is queued: the queue is strict FIFO, so a fitting newcomer never
//     overtakes a waiting request.
//
// Otherwise the request queues, and is admitted from the head as conditions allow.
// When the head is held back by count or memory (never when only CPU holds it),
// and evicting parked permits could let it in, they are evicted, oldest first,
// until it fits. A full queue
// (WithMaxQueueLength) refuses a request at once with ErrQueueFull; with
// WithShedFactor, a queued request that would be admitted with too little of its
// time budget left fails with ErrShed instead. Both count as shed. A request whose
// context ends leaves the queue at once, and the requests behind it are admitted if
// they now fit.
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
// # Diagnostics
//
// Stats returns counters after the reader concurrency semaphore's. Diagnostics
// renders a dump: usage against limits, the bottleneck(s), the permits grouped by
// operation and state. With WithLogger, a dump is logged automatically when a
// request times out, when the queue overflows and when the kill limit is hit, at
// most once per WithDumpInterval (default 30 s), since such problems come in bursts.
//
// # Decisions where the design leaves room
//
//   - Preemptive shedding is checked at the moment a queued request would be
//     admitted, and only for requests with a context deadline; NotShed exempts one.
//   - Eviction releases a parked permit's base resources; memory it consumed stays
//     accounted to it until returned or released.
//   - Releasing a parked permit unregisters it and closes its value.
//   - When a grant races a cancellation, the caller sees its context error and the
//     granted resources are given back, as in the core semaphore.
//   - The dump names CPU as a bottleneck only while some permit needs CPU without
//     awaiting: permits that await I/O do not hold admission back.
//   - A Controller uses one mutex: admission is decided under it, and user code
//     (OnEvict, closing values, logging) runs only after it is released.
package admission
