package adaptive

import (
	"context"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
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

// acquireStanding is AcquireN under WithStandingQueue.
func (l *Limiter) acquireStanding(ctx context.Context, n int64) error {
	if l.gate.TryAcquire(n) {
		l.lastEmpty.Store(time.Now().UnixNano())
		return nil
	}
	l.waited.Add(1)
	start := time.Now()
	if l.gate.Waiters() == 0 {
		l.lastEmpty.Store(start.UnixNano())
	}
	if !l.standing(start) {
		err := l.gate.Acquire(ctx, n)
		if err != nil {
			return err
		}
		now := time.Now()
		if now.Sub(start) <= l.cfg.standingTarget || !l.standing(now) {
			return nil
		}
		// Granted, but late, in a queue that stood meanwhile: the call would
		// most likely miss its own deadline at the backend. Hand the slot on.
		l.gate.Release(n)
		return l.shedError(n, "granted after "+now.Sub(start).String())
	}
	wctx, cancel := context.WithTimeout(ctx, l.cfg.standingTarget)
	err := l.gate.Acquire(wctx, n)
	cancel()
	if err != nil && ctx.Err() == nil {
		if o, _ := semaphore.OutcomeOf(err); o == semaphore.TimedOut {
			return l.shedError(n, "waited "+l.cfg.standingTarget.String())
		}
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

// shedError counts a caller cut short and returns its error: its outcome is
// semaphore.Shed and it matches semaphore.ErrShed only, however its wait
// ended.
func (l *Limiter) shedError(n int64, what string) error {
	l.mu.Lock()
	l.shed++
	l.mu.Unlock()
	return &errs.Error{Subject: errs.Text(errs.Label("adaptive limiter", l.cfg.name, l)), Op: "acquire", N: n,
		Why:     "shed: " + what + " in a queue standing for over " + l.cfg.standingInterval.String(),
		Outcome: semaphore.Shed, Matches: []error{semaphore.ErrShed}}
}
