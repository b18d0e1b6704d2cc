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
// until it fits. A full queue (WithMaxQueueLength) refuses a request at once with
// ErrQueueFull; with
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
// # Decisions where the design leaves room
//
//   - Preemptive shedding is checked at the moment a queued request would be
//     admitted, and only for requests with a context deadline; NotShed exempts one.
//   - Eviction releases a parked permit's base resources; memory it consumed stays
//     accounted to it until returned or released.
//   - Releasing a parked permit unregisters it and closes its value.
//   - A permit may have several RequestMemory calls waiting at once (several
//     goroutines may serve one request); they are granted in FIFO order with
//     everyone else's, the permit is WaitingForMemory while any is pending, and
//     Park and Release fail all of them. Nothing is granted to a permit that is not
//     active. While waiting for memory a permit is admitted, so its CPU marks count.
//   - Readmit decides and acts in one critical section, so of two concurrent calls
//     on an evicted permit exactly one takes the base: the other fails with
//     ErrEvicted ("already being readmitted") while the first waits, or returns nil
//     once it has succeeded. Readmit on an active or parked permit returns nil.
//   - When a grant races a cancellation, Acquire and RequestMemory return the
//     context error and give the grant back, as in the core semaphore; Readmit
//     keeps a grant that raced its context and returns nil, because the permit is
//     shared and other goroutines may already be using it once it is active.
//   - A readmitted or resumed permit's marks count again even if that puts the
//     count of CPU-bound permits past the CPU concurrency: admission stops until
//     it falls back, as for marks taken by admitted permits.
//   - Park on a permit that is not active returns an error (ErrEvicted, or
//     ErrReleased) rather than panicking: with permits shared between goroutines it
//     is a runtime condition. Park on another controller's permit panics.
//   - Errors are built with fmt.Errorf and %w: they match their sentinels (and the
//     context's errors) with errors.Is, and read "admission <name>: <op> <request>:
//     <reason>".
//   - The dump names CPU as a bottleneck only while some permit needs CPU without
//     awaiting: permits that await I/O do not hold admission back.
//   - A Controller uses one mutex, and every decision and the action it guards
//     happen in one hold of it; every read of its state, for messages and dumps
//     too, happens under it. User code (OnEvict, closing values, logging) runs only
//     after it is released.
package admission
