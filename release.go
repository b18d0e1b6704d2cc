package semaphore

// Release returns n units and grants the waiters that now fit, in FIFO order, on
// the caller's goroutine; it never blocks on a waiter. It panics if n is negative
// or if it would make more units available than the capacity, except on a broken
// semaphore, where it counts the units returned, for Drain.
func (s *Semaphore) Release(n int64) {
	for spins := minReleaseSpins; ; spins = min(2*spins, maxReleaseSpins) {
		st := s.state.Load()
		// n <= out (capacity - available), as one unsigned comparison that also
		// sends a negative n to releaseSlow. See "Over-release" in semaphore.go.
		if st&flagsAll != flagHealthy || uint64(n) > uint64(s.capacity.Load()-st>>unitShift) {
			break
		}
		if s.state.CompareAndSwap(st, st+n<<unitShift) {
			return
		}
		// Another goroutine changed the word between our load and swap. If it
		// set a flag (a caller started waiting, a Drain began, Break), the next
		// turn takes the slow path at once: waiters are owed their grant now.
		// Otherwise two or more cores are taking turns at the word's cache line,
		// and each turn moves the line. Waiting, longer after each failure,
		// without touching it lets the others run a burst of acquire/release
		// pairs with the line local, as a mutex's loser does while it spins or
		// sleeps; retrying at once makes every operation pay for a move
		// (BENCHMARKS.md: "The contended path that never blocks"). Nothing is
		// decided while waiting: the next turn reloads the word.
		if s.state.Load()&flagsAll == flagHealthy {
			spinWait(spins)
		}
	}
	s.releaseSlow(n)
}

// The backoff of a Release whose swap failed, in iterations of spinWait: about
// 0.7µs doubling to 2.8µs on the machine measured, the order of a sync.Mutex's
// spinning before it sleeps, and less than a park and a wake-up. Half as long
// was slower on the contended mix at -cpu 2; the numbers of each are in
// BENCHMARKS.md.
const (
	minReleaseSpins = 2048
	maxReleaseSpins = 8192
)

// spinWait busies the processor for about n loop iterations, touching no shared
// memory. It is not inlined, so that the loop stays a loop.
//
//go:noinline
func spinWait(n int) {
	for i := 0; i < n; i++ {
	}
}

// releaseSlow finishes a Release that found a flag set or would release more than
// is out; it decides under mu, where the capacity is stable.
func (s *Semaphore) releaseSlow(n int64) {
	s.checkUse("Release", n)
	s.mu.Lock()
	capacity := s.capacity.Load()
	for {
		st := s.state.Load()
		out := capacity - unitsOf(st) // in [0, 2*MaxUnits]: no overflow
		add := n
		if n > out {
			if st&flagHealthy != 0 {
				s.mu.Unlock()
				s.panicf("Release(%d): released more than held (%d out of a capacity of %d)",
					n, out, capacity)
			}
			add = out // after Break: count what comes back, never past the capacity
		}
		if s.state.CompareAndSwap(st, st+add<<unitShift) {
			break
		}
	}
	var woken wakeList
	s.grantLocked(&woken)
	s.notifyDrainLocked()
	s.mu.Unlock()
	woken.wake()
}

// Consume takes n units at once, available or not, for resources already spent:
// it never blocks, never queues and ignores waiters, and availability may go below
// zero. Give the units back with Release. It panics, changing nothing, if n is
// negative or larger than MaxUnits, or if the debt would exceed MaxUnits.
func (s *Semaphore) Consume(n int64) {
	s.checkUse("Consume", n)
	if n > MaxUnits {
		s.panicf("Consume(%d): more than %d units", n, int64(MaxUnits))
	}
	// Consume only lowers the count, so it can never let a waiter in and needs
	// neither the lock nor a look at the wait list. After Break the units are
	// still counted, though Available shows 0, so that Drain waits for them.
	for {
		st := s.state.Load()
		// After Break the units are still counted, though Available shows 0:
		// the Release that gives them back must not end a Drain early.
		if unitsOf(st)-n < -MaxUnits {
			s.panicf("Consume(%d): units in debt would exceed %d (%d available)",
				n, int64(MaxUnits), unitsOf(st))
		}
		if s.state.CompareAndSwap(st, st-n<<unitShift) {
			return
		}
	}
}

// Resize sets the capacity without revoking holders: growing grants the waiters
// that now fit; shrinking below what is held leaves Available at 0 until enough
// units come back. Waiters asking for more than the new capacity fail with
// ErrTooLarge. Resize does nothing on a broken semaphore and panics if capacity is
// negative or larger than MaxUnits.
func (s *Semaphore) Resize(capacity int64) {
	if capacity < 0 || capacity > MaxUnits {
		s.panicf("Resize(%d): capacity must be between 0 and %d", capacity, int64(MaxUnits))
	}
	if s.isZero() {
		panic(errZeroValue)
	}
	s.mu.Lock()
	if s.state.Load()&flagHealthy == 0 {
		s.mu.Unlock()
		return
	}
	old := s.capacity.Load()
	if delta := capacity - old; delta != 0 {
		// A lock-free Release loads the state, then the capacity. Shrinking
		// stores the capacity first, growing changes the units first, so a
		// Release that sees one old and one new value checks against less room
		// than there is and falls to releaseSlow, which waits for mu.
		if delta < 0 {
			s.capacity.Store(capacity)
		}
		// The counter bump makes the word differ from every value loaded before
		// this Resize (see "Over-release" in semaphore.go); immediate is lowered to
		// keep their sum, the grant count, unchanged. A swap of the value checked,
		// not an Add: a lock-free grant may fill the counter after the check, and
		// the bump would then carry into the units.
		for {
			st := s.state.Load()
			if st&countMask == countMask {
				s.foldLocked()
				continue
			}
			if s.state.CompareAndSwap(st, st+delta<<unitShift+countOne) {
				break
			}
		}
		s.immediate--
		if delta > 0 {
			s.capacity.Store(capacity)
		}
	}
	var woken wakeList
	for w := s.waiting.Front(); w != nil; {
		next := w.link.Next()
		if w.n.Load() > capacity {
			s.settleLocked(w, TooLarge, &woken)
		}
		w = next
	}
	s.grantLocked(&woken)
	s.mu.Unlock()
	woken.wake()
}
