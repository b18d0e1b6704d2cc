package semaphore

import "runtime"

// The state word packs the units available now with a grant counter and three
// flags, so that each uncontended call is one atomic operation and takes no lock:
//
//	bits 63..18  units available, signed (negative after Consume or a shrinking Resize)
//	bits 17..3   grants made without the lock since the last fold (see foldLocked)
//	bit  2       flagDraining: a Drain waits, so every Release takes the lock
//	bit  1       flagBroken: Break was called; never cleared
//	bit  0       flagWaiting: the wait list is not empty
//
// Adding or subtracting units adds a multiple of 1<<unitShift, which leaves the low
// bits alone, so units and flags change together in one atomic operation.
//
// Range. Capacities, requests, releases and Consume amounts are at most MaxUnits
// (M = 2^44-1), and the units field holds [-2^45, 2^45-1], which contains
// [-2M, 2M]. Let out = capacity - available (units held or consumed):
//   - an acquisition leaves available >= 0, so out <= capacity <= M;
//   - Consume refuses (panics) before available would go below -M, so out <= 2M;
//   - Resize leaves out unchanged; Release refuses before out would go below 0.
//
// So available stays in [-2M, M], and available + n for any n <= M stays in
// [-2M, 2M]: every check below is made on a value that cannot have wrapped, and
// each one is made before the word changes (a compare-and-swap of the value checked).
//
// Over-release. A Release of n is correct only if n <= out, that is if available + n
// <= capacity. Release checks exactly that against the value its compare-and-swap
// installs, so a Release that would make more units available than the capacity is
// refused, whatever runs concurrently. The capacity is a second word, written only
// under mu, and read by the lock-free Release between its load and its swap of the
// state. Resize writes the two in the order that makes every mixed view stricter
// than either consistent one (a refusal then falls to releaseSlow, which decides
// under mu), and it bumps the grant counter: a Release that read a capacity a Resize
// changed before the swap can only succeed if the state word came back to the very
// value the Release loaded, counter included, which takes 32,767 further grants or
// resizes while that goroutine is stopped between two instructions.
//
// Memory ordering. sync/atomic operations are sequentially consistent, and nothing
// weaker is relied on:
//   - flagWaiting <=> the wait list is not empty, whenever mu is free. The flag is
//     set under mu, by a compare-and-swap against the exact value join examined, and
//     cleared under mu when the last waiter is removed (removeLocked).
//   - A lock-free grant (tryAcquire) is a compare-and-swap conditioned on
//     flagWaiting and flagBroken being clear, so it never takes units past a waiter.
//   - A lock-free Release is a compare-and-swap conditioned on all three flags being
//     clear. If join's swap setting flagWaiting came first, the Release's swap fails
//     and it takes mu to grant; if the Release came first, join's swap fails and
//     join looks again and sees the units. Either way no unit lands unseen while
//     someone waits (see join), and the same holds for Drain and flagDraining.
//   - After any change under mu that could let the head fit (a release, a waiter
//     leaving, a resize), grantLocked runs before mu is released, so "units free,
//     head fits, head still waiting" never outlasts a critical section.
//   - grantLocked takes a waiter's units before unlinking it, so clearing
//     flagWaiting with the last waiter cannot let a lock-free acquirer in first.
//   - The grant counter is folded into Semaphore.immediate only under mu, so the
//     two add up exactly whenever mu is held (Stats holds it).
const (
	flagWaiting  = 1 << 0
	flagBroken   = 1 << 1
	flagDraining = 1 << 2
	flagsAll     = flagWaiting | flagBroken | flagDraining

	countShift = 3
	countOne   = 1 << countShift
	countMask  = (1<<15 - 1) << countShift // folded before it can carry into the units

	unitShift = 18
)

// MaxUnits is the largest capacity, request or Consume a Semaphore accepts: 2^44-1,
// about 17.6 TB when units are bytes. Debt from Consume is limited to MaxUnits too.
const MaxUnits = 1<<44 - 1

// units returns the units field of a state word.
func unitsOf(st int64) int64 { return st >> unitShift }

// tryAcquire is the single lock-free attempt of every acquire form, small enough to
// be inlined into them. False means "take the slow path", which decides for good.
func (s *Semaphore) tryAcquire(n int64) bool {
	st := s.state.Load()
	return st&(flagWaiting|flagBroken) == 0 && st&countMask != countMask &&
		n >= 0 && st>>unitShift >= n &&
		s.state.CompareAndSwap(st, st-n<<unitShift+countOne)
}

// acquireLockFree retries the lock-free grant while other goroutines change the
// word, and folds the grant counter when it is full. It reports false as soon as
// the units are not available, someone waits, or the semaphore is broken.
func (s *Semaphore) acquireLockFree(n int64) bool {
	backoff := 1
	for {
		st := s.state.Load()
		if st&(flagWaiting|flagBroken) != 0 || st>>unitShift < n {
			return false
		}
		if st&countMask == countMask {
			s.fold() // once every 32,767 lock-free grants
			continue
		}
		if s.state.CompareAndSwap(st, st-n<<unitShift+countOne) {
			return true
		}
		// Another goroutine changed the word between our load and swap: the
		// cache line is contended. Stepping aside, longer after each failure,
		// lets the others run a burst of acquire/release pairs with the line
		// local, and lets holders release before this call gives up and queues
		// (once one call queues, every later one queues behind it).
		for range backoff {
			runtime.Gosched()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// yieldThenAcquire gives the holders one chance to release before a call that found
// too few units queues: unless someone waits or the semaphore is broken, it yields
// the processor once and retries the lock-free grant. A unit held for a few
// nanoseconds is then usually caught without a park and a wake-up, which cost far
// more than the yield (BENCHMARKS.md: "Yielding once before queueing"); a unit held
// longer costs the caller one yield before it queues. FIFO is untouched: the call
// is not in the list while it yields, and a lock-free grant is refused while
// anyone is. TryAcquire and AcquireTimeout(d <= 0) never yield: they do not wait.
func (s *Semaphore) yieldThenAcquire(n int64) bool {
	if s.state.Load()&(flagWaiting|flagBroken) != 0 {
		return false
	}
	runtime.Gosched()
	return s.acquireLockFree(n)
}

// maxBackoff caps the number of scheduler yields after a failed swap.
const maxBackoff = 8

// fold moves the state word's grant counter into s.immediate.
func (s *Semaphore) fold() {
	s.mu.Lock()
	s.foldLocked()
	s.mu.Unlock()
}

// foldLocked empties the state word's grant counter into s.immediate. Only holders
// of mu fold, so the sum of the two is exact whenever mu is held.
func (s *Semaphore) foldLocked() {
	for {
		st := s.state.Load()
		if s.state.CompareAndSwap(st, st&^countMask) {
			s.immediate += uint64(st&countMask) >> countShift
			return
		}
	}
}
