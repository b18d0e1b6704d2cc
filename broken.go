package semaphore

// breakState is what Break leaves behind: the error Err returns, and the cause that
// every failed call wraps.
type breakState struct {
	err     error   // what Err returns: matches ErrBroken and cause
	cause   error   // the error passed to Break; may be nil
	why     string  // "broken" or "broken: " + the cause's text, for every failed call's message
	matches []error // ErrBroken and the cause, shared by every failed call's error
}

// Break puts the semaphore in the broken state, for shutdown or when the state the
// semaphore guards can no longer be trusted. Every waiter fails, in FIFO order, with
// an error that matches ErrBroken and err (when err is not nil). From then on
// Acquire, AcquireTimeout and AcquireUnits fail at once the same way, TryAcquire
// returns false, Available reports 0, Resize does nothing, and Release never
// panics, so holders can still return their units without knowing about the break.
// Units released and consumed are still counted, so that Drain can wait for them. Only
// the first Break counts; later calls do nothing. Break never blocks on a waiter:
// it wakes them and returns.
func (s *Semaphore) Break(err error) {
	s.mu.Lock()
	if s.broken.Load() != nil {
		s.mu.Unlock()
		return
	}
	b := &breakState{cause: err, why: "broken", matches: []error{ErrBroken}}
	if err != nil {
		b.why += ": " + err.Error()
		b.matches = append(b.matches, err)
	}
	b.err = &opError{s: s, why: b.why, matches: b.matches}
	// Store the state before the flag: a lock-free path that sees the flag reads
	// the state next, and the atomics order the two.
	s.broken.Store(b)
	s.state.Or(flagBroken)
	var woken wakeList
	for s.head != nil {
		s.settleLocked(s.head, settledBroken, &woken)
	}
	s.mu.Unlock()
	woken.wake()
	if s.observer != nil {
		s.observer.Broken(s, err)
	}
}

// Err returns nil while the semaphore is healthy, and after Break an error that
// matches ErrBroken and the error passed to Break.
func (s *Semaphore) Err() error {
	if b := s.broken.Load(); b != nil {
		return b.err
	}
	return nil
}
