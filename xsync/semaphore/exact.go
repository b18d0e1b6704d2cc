package semaphore

import (
	"context"
	"strconv"

	"github.com/fairsem/semaphore/internal/list"
)

// The exact path serves the sizes the core cannot count, those above
// core.MaxUnits (2^44-1), and the zero Weighted. It counts caller units one for
// one in cur under mu, as x/sync does, with its own FIFO list of waiters.
//
// Why not the core in blocks of b caller units. Rounding each call to whole
// blocks on its own is wrong: ceil(a/b)+ceil(c/b) != ceil((a+c)/b), so an
// Acquire(2) released as two Release(1) returns two blocks for one taken (a
// panic), and three Acquire(1) released as one Release(3) returns one block for
// three (two lost for good). Deriving the core's units from an exact total T, so
// that the core holds ceil(T/b), fixes Release but not the wait list: a queued
// Acquire(n) needs ceil((T+n)/b) - ceil(T/b) core units, which depends on T at the
// moment of its grant, and the core decides that grant alone, under its own lock,
// with the unit count fixed when the waiter joined. No fixed count is right for
// every T, and a grant decided on a wrong count differs from x/sync's (granted too
// early, or made to wait while x/sync grants). So above MaxUnits the count is exact
// and the queue is ours.
//
// Correctness. Every method reads and writes (cur, waiters) in one hold of mu, so
// the calls are linearizable, and each maps that state exactly as
// x/sync/semaphore.Weighted maps its (cur, waiters): the same grant rule
// (n <= size-cur and nobody waiting, else queue unless n > size), the same FIFO
// grant loop (grantLocked stops at the first waiter that does not fit), the same
// over-release check (n > cur; ours panics before changing cur). All arithmetic is
// on exact int64 values that cannot overflow: cur and every n compared with
// size-cur lie in [0, size], so size-cur, cur+n (only when n <= size-cur) and
// cur-n (only when n <= cur) stay in [0, size]. Hence the same sequence of calls
// gives the same answers, and a Release split into any pieces lands on the same
// cur as one Release of their sum, granting on the way exactly what x/sync grants
// after each piece.
//
// Invariant, true whenever mu is free: if the list is not empty, its head does not
// fit (head.n > size-cur). Every change that could make it fit (a Release, the head
// leaving, units handed back by a cancelled grant) ends with grantLocked. So a
// waiter is granted as soon as it is at the head and fits, in arrival order: a
// large waiter at the head holds back smaller ones behind it and is never starved.
//
// Cancellation racing the grant. A grant is decided under mu: cur += n, the waiter
// leaves the list, its ready channel is closed, all in one hold. A waiter whose
// ctx ends takes mu and looks at ready: closed means it was granted first, so it
// gives the n units back and runs grantLocked (the units are handed on, never
// lost); open means it is still queued, so it leaves the list, and if it was the
// head, runs grantLocked for the waiters behind it. A waiter woken by its grant
// that then finds ctx done also gives the units back and fails, as x/sync does.
// Either way Acquire returns ctx.Err() and the semaphore is as if it had never
// been called. One deliberate difference from x/sync, the same as the core's: a
// leaving head always runs grantLocked, so n = 0 waiters right behind it are
// granted even when no unit is free (x/sync leaves them until the next Release).

// waiter is an Acquire call queued on the exact path.
type waiter struct {
	n     int64             // fixed
	ready chan struct{}     // closed under mu when granted, after it left the list
	link  list.Link[waiter] // its place in Weighted.waiters; guarded by mu
}

func (s *Weighted) acquireExact(ctx context.Context, n int64) error {
	if n < 0 {
		s.panicNegative("Acquire", n)
	}
	done := ctx.Done()
	s.mu.Lock()
	if done != nil { // a context that is never done skips the select
		select {
		case <-done:
			// Done before the call could be granted, even if n units are free.
			s.mu.Unlock()
			return ctx.Err()
		default:
		}
	}
	if n <= s.size-s.cur && s.waiters.Len() == 0 {
		s.cur += n
		s.mu.Unlock()
		return nil
	}
	if n > s.size {
		// It can never be granted: it waits for ctx without queuing, so that it
		// holds back nobody.
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
	w := &waiter{n: n, ready: make(chan struct{})}
	s.waiters.PushBack(&w.link, w)
	s.mu.Unlock()

	select {
	case <-w.ready:
		select {
		case <-done:
			// Granted, but ctx ended too: fail, and hand the units on.
			s.mu.Lock()
			s.cur -= n
			s.grantLocked()
			s.mu.Unlock()
			return ctx.Err()
		default:
			return nil
		}
	case <-done:
		s.mu.Lock()
		select {
		case <-w.ready:
			// Granted before this hold of mu: hand the units on.
			s.cur -= n
			s.grantLocked()
		default:
			wasHead := s.waiters.Front() == w
			s.waiters.Remove(&w.link)
			if wasHead {
				// The new head may fit now; one behind any other waiter cannot.
				s.grantLocked()
			}
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

func (s *Weighted) tryAcquireExact(n int64) bool {
	if n < 0 {
		s.panicNegative("TryAcquire", n)
	}
	s.mu.Lock()
	ok := n <= s.size-s.cur && s.waiters.Len() == 0
	if ok {
		s.cur += n
	}
	s.mu.Unlock()
	return ok
}

func (s *Weighted) releaseExact(n int64) {
	if n < 0 {
		s.panicNegative("Release", n)
	}
	s.mu.Lock()
	if n > s.cur {
		held := s.cur
		s.mu.Unlock()
		panic("semaphore: Weighted of size " + strconv.FormatInt(s.size, 10) + ": Release(" +
			strconv.FormatInt(n, 10) + "): released more than held (" + strconv.FormatInt(held, 10) + " held)")
	}
	s.cur -= n
	s.grantLocked()
	s.mu.Unlock()
}

// grantLocked grants the waiters at the head of the list, in order, as long as
// they fit, and stops at the first that does not: a smaller request behind it is
// not let past, so that a large one is never starved. mu must be held.
func (s *Weighted) grantLocked() {
	for w := s.waiters.Front(); w != nil && w.n <= s.size-s.cur; w = s.waiters.Front() {
		s.cur += w.n
		s.waiters.Remove(&w.link)
		close(w.ready)
	}
}

func (s *Weighted) panicNegative(op string, n int64) {
	panic("semaphore: Weighted of size " + strconv.FormatInt(s.size, 10) + ": " + op + "(" +
		strconv.FormatInt(n, 10) + "): negative weight")
}
