package adaptive

import (
	"context"
	"fmt"
	"time"

	"github.com/fairsem/semaphore"
)

// WithStandingQueue fails queued callers once the wait queue stands, as CoDel
// does and as described in "Fail at Scale": the queue is standing when no
// caller has found it empty for longer than interval. Then a caller that
// arrives waits at most target, and a caller granted after waiting longer than
// target gives its slot on at once; both fail with an error matching
// semaphore.ErrShed (and so ErrQueueFull), as admission's shed requests do. While the queue drains in time (a caller found it
// empty within interval), callers wait as long as their context allows, so
// bursts are absorbed. The callers cut short are counted in Stats.Shed; they
// are not samples (they never reached the backend). Typical values: 5ms and
// 100ms. It panics unless 0 < target and 0 < interval.
func WithStandingQueue(target, interval time.Duration) Option {
	if target <= 0 || interval <= 0 {
		panic("adaptive: WithStandingQueue(" + target.String() + ", " + interval.String() + "): both must be positive")
	}
	return func(c *config) { c.standingTarget, c.standingInterval = target, interval }
}

// acquireStanding is Acquire under WithStandingQueue.
func (l *Limiter) acquireStanding(ctx context.Context) error {
	if l.sem.TryAcquire(1) {
		l.lastEmpty.Store(time.Now().UnixNano())
		return nil
	}
	start := time.Now()
	if l.sem.Waiters() == 0 {
		l.lastEmpty.Store(start.UnixNano())
	}
	if !l.standing(start) {
		err := l.sem.Acquire(ctx, 1)
		if err != nil {
			return err
		}
		now := time.Now()
		if now.Sub(start) <= l.cfg.standingTarget || !l.standing(now) {
			return nil
		}
		// Granted, but late, in a queue that stood meanwhile: the call would
		// most likely miss its own deadline at the backend. Hand the slot on.
		l.sem.Release(1)
		return l.shedError("granted after "+now.Sub(start).String(), semaphore.ErrTimedOut)
	}
	wctx, cancel := context.WithTimeout(ctx, l.cfg.standingTarget)
	err := l.sem.Acquire(wctx, 1)
	cancel()
	if err != nil && ctx.Err() == nil {
		return l.shedError("waited "+l.cfg.standingTarget.String(), err)
	}
	return err
}

// standing reports whether no caller found the queue empty within the
// interval before now. lastEmpty is read and written without the semaphore's
// lock: it is a heuristic, and a caller that races with one finding the queue
// empty at most waits as the state a moment earlier allowed.
func (l *Limiter) standing(now time.Time) bool {
	return now.UnixNano()-l.lastEmpty.Load() > int64(l.cfg.standingInterval)
}

// shedError counts a caller cut short and returns its error, which wraps
// semaphore.ErrShed and gives cause's text. It does not match cause: a shed
// call has one meaning, shed, however its wait ended.
func (l *Limiter) shedError(what string, cause error) error {
	l.mu.Lock()
	l.shed++
	l.mu.Unlock()
	return fmt.Errorf("adaptive %q: acquire: %w: %s in a queue standing for over %v: %v",
		l.cfg.name, semaphore.ErrShed, what, l.cfg.standingInterval, cause)
}
