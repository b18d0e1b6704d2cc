package amqpsem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	amqp "github.com/rabbitmq/amqp091-go"
)

// TryAcquire is the protocol's acquire for n slots: it walks the slots from
// slot 1 and declares the holder queues of the first n free ones, and returns
// them as Units, or reports false, taking nothing, when fewer than n are free.
// It does not wait for slots, though it does wait on the broker (a few round
// trips). It never jumps this handle's own waiters: while a caller of this
// handle waits in Acquire it returns false. Other clients have no queue to
// jump (see the package doc on order).
//
// It fails, taking nothing, with an error wrapping semaphore.ErrTooLarge when
// n exceeds the semaphore's slots, semaphore.ErrBroken after Break,
// ErrContended when other clients won the race for free slots on each of its
// attempts (WithAttempts), ErrBlocked during a resource alarm, ErrRefused when
// the broker refuses the declarations (permissions), ErrClosed after Close, or
// the broker's error; when ctx ends, with ctx's error. It panics if n is
// negative or above MaxSlots.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64) (*Units, bool, error) {
	s.checkUnits("TryAcquire", n)
	c := tryCall(int(n))
	start := time.Now()
	if err := s.admissible(ctx, c, start); err != nil {
		return nil, false, err
	}
	if !s.turn.TryAcquire(1) {
		if err := s.admissible(ctx, c, start); err != nil {
			return nil, false, err
		}
		return nil, false, nil // a caller of this handle waits: it goes first
	}
	defer s.turn.Release(1)
	u, r, err := s.attempt(ctx, c, int(n), start)
	if err != nil {
		return nil, false, err
	}
	if u == nil {
		if r.capacity < int(n) {
			return nil, false, s.tooLargeError(c, r.capacity)
		}
		return nil, false, nil
	}
	return u, true, nil
}

// Acquire takes n slots, waiting until n are free at once, and returns them as
// Units held by this handle's connection. Callers of one handle are served in
// FIFO order: the first waits for its n slots while the others queue behind
// it, as in-process. Across handles and processes there is no queue: when
// slots come free, each handle's first waiter walks the slots again and the
// first declare to reach the broker wins (see the package doc on order). A
// waiter learns that slots came free from the broker's events (queue deleted,
// queue created) or, without the event exchange, by probing again after a
// backoff (see WithWakeup), and at once from releases of its own handle.
//
// It blocks until the slots are held or ctx ends. It fails, taking nothing,
// when ctx ends (ctx's error, and semaphore.ErrTimedOut for a deadline), when
// n exceeds the semaphore's slots (semaphore.ErrTooLarge, also for a waiter
// left too large by RemoveSlots), on Break (semaphore.ErrBroken), on Close
// (ErrClosed), and when the broker fails or refuses it (ErrBlocked,
// ErrRefused). A connection that drops or cannot be dialled while it waits is
// dialled again after a backoff, until ctx ends; a holder queue it declared on
// a connection that dropped is gone with it, so it never leaves a slot held by
// nobody. It panics if n is negative or above MaxSlots.
func (s *Semaphore) Acquire(ctx context.Context, n int64) (*Units, error) {
	s.checkUnits("Acquire", n)
	c := acquireCall(int(n))
	start := time.Now()
	if err := s.admissible(ctx, c, start); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.waiting++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}()
	if err := s.turn.Acquire(ctx, 1); err != nil {
		if aerr := s.admissible(ctx, c, start); aerr != nil {
			return nil, aerr
		}
		return nil, s.waitError(ctx, c, start)
	}
	defer s.turn.Release(1)
	backoff := s.cfg.pollMin
	for {
		sub := s.wake.subscribe(ctx)
		gen := s.wake.current()
		u, r, err := s.attempt(ctx, c, int(n), start)
		switch {
		case err != nil && !errors.Is(err, ErrContended) && !transient(err):
			return nil, err
		case u != nil:
			return u, nil
		case err == nil && r.capacity < int(n):
			return nil, s.tooLargeError(c, r.capacity)
		}
		// Wait for a change: a holder queue deleted or a slot added (events,
		// or a release of this handle), or the next probe when polling.
		wait := eventsSafetyPoll
		if !sub || err != nil && !errors.Is(err, ErrContended) {
			wait = jitter(backoff)
			backoff = min(2*backoff, s.cfg.pollMax)
		}
		t := time.NewTimer(wait)
		select {
		case <-gen:
			backoff = s.cfg.pollMin
		case <-t.C:
		case <-ctx.Done():
		case <-s.brokenCh:
		case <-s.bg.Done():
		}
		t.Stop()
		if err := s.admissible(ctx, c, start); err != nil {
			return nil, err
		}
	}
}

// AcquireTimeout is Acquire with a deadline d from now. On expiry it returns
// an error matching semaphore.ErrTimedOut and context.DeadlineExceeded. If
// d <= 0 it does not wait: it succeeds when TryAcquire would, and otherwise
// returns the timeout error.
func (s *Semaphore) AcquireTimeout(ctx context.Context, d time.Duration, n int64) (*Units, error) {
	if d <= 0 {
		u, ok, err := s.TryAcquire(ctx, n)
		if err != nil || ok {
			return u, err
		}
		return nil, s.fail(acquireCall(int(n)), semaphore.TimedOut, "timed out after "+d.String()+": "+context.DeadlineExceeded.Error(),
			semaphore.ErrTimedOut, context.DeadlineExceeded)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return s.Acquire(ctx, n)
}

// admissible returns the error of call c if it cannot go on: the handle is
// closed or broken, or ctx ended.
func (s *Semaphore) admissible(ctx context.Context, c call, start time.Time) error {
	s.mu.Lock()
	closed, broken, reason := s.closed, s.broken, s.reason
	s.mu.Unlock()
	switch {
	case closed:
		return s.closedError(c)
	case broken:
		return s.brokenError(c, reason)
	case ctx.Err() != nil:
		return s.waitError(ctx, c, start)
	}
	return nil
}

// attempt runs one walk for n slots on the current session, on a goroutine of
// its own: the caller waits for it as long as ctx lets it, and if it leaves
// first the walk gives back what it took (walk never ends holding a slot it
// does not return). It returns the Units, or nil and the walk's result when
// fewer than n slots were free; or the call's error.
func (s *Semaphore) attempt(ctx context.Context, c call, n int, start time.Time) (*Units, walkResult, error) {
	if n == 0 {
		u := s.newUnits(nil, nil)
		return u, walkResult{ok: true}, nil
	}
	sess, err := s.currentSession(ctx)
	if err != nil {
		return nil, walkResult{}, s.attemptError(ctx, c, start, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.bg, cancel)
	done := make(chan walkResult, 1)
	if !s.spawn(func() { done <- s.walk(wctx, sess, n) }) {
		stop()
		cancel()
		return nil, walkResult{}, s.closedError(c)
	}
	var r walkResult
	select {
	case r = <-done:
	case <-wctx.Done():
		// The walk sees wctx end too, gives back what it took and returns.
		r = <-done
	}
	stop()
	cancel()
	s.mu.Lock()
	s.walks++
	s.mu.Unlock()
	if r.err != nil {
		return nil, r, s.attemptError(ctx, c, start, r.err)
	}
	if !r.ok {
		return nil, r, nil
	}
	s.mu.Lock()
	if sess.err() != nil {
		// Lost between the walk's end and here: sessionLost did not see
		// these units, and the broker dropped their queues with the connection.
		s.mu.Unlock()
		return nil, r, s.attemptError(ctx, c, start, sess.err())
	}
	u := s.newUnitsLocked(sess, r.slots)
	s.acquired++
	s.mu.Unlock()
	return u, r, nil
}

// attemptError is the error of call c that failed with err: the wait's when
// ctx ended, ErrClosed's when the handle closed, the broker's otherwise.
func (s *Semaphore) attemptError(ctx context.Context, c call, start time.Time, err error) error {
	if aerr := s.admissible(ctx, c, start); aerr != nil {
		return aerr
	}
	if errors.Is(err, ErrClosed) {
		return s.closedError(c)
	}
	return s.brokerError(c, err)
}

// waitError is the error of call c whose ctx ended.
func (s *Semaphore) waitError(ctx context.Context, c call, start time.Time) error {
	deadline, why, matches := errs.Context(ctx)
	s.mu.Lock()
	if deadline {
		s.timedOut++
	} else {
		s.cancelled++
	}
	s.mu.Unlock()
	after := " after " + time.Since(start).Round(time.Millisecond).String() + ": " + why
	if deadline {
		return s.fail(c, semaphore.TimedOut, "timed out"+after, append(matches, semaphore.ErrTimedOut)...)
	}
	return s.fail(c, semaphore.Cancelled, "canceled"+after, matches...)
}

// checkUnits panics on a count out of range: a programmer error.
func (s *Semaphore) checkUnits(op string, n int64) {
	if n < 0 || n > MaxSlots {
		panic(fmt.Sprintf("amqpsem %q: %s(%d): units out of range [0, %d]", s.name, op, n, MaxSlots))
	}
}

// transient reports whether an acquire that failed with err may succeed if it
// tries again: the connection dropped, was lost or could not be dialled. What
// the broker refused for good, a resource alarm, Close, Break and the caller's
// context end the call instead.
func transient(err error) bool {
	if _, ok := semaphore.OutcomeOf(err); ok {
		return false
	}
	var de *dialError
	if errors.As(err, &de) {
		return true
	}
	for _, final := range []error{ErrRefused, ErrBlocked, ErrClosed} {
		if errors.Is(err, final) {
			return false
		}
	}
	var ae *amqp.Error
	var ne net.Error
	var oe *net.OpError
	return errors.Is(err, ErrLost) || errors.Is(err, errNoAnswer) || errors.Is(err, amqp.ErrClosed) || errors.As(err, &ae) || errors.As(err, &ne) ||
		errors.As(err, &oe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET)
}
