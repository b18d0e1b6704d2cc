package adaptive

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrShed is wrapped, together with semaphore.ErrTimedOut, by the error of a
// wait that WithStandingQueue cut short.
var ErrShed = errors.New("shed from a standing queue")

// WithStandingQueue bounds waiting once the wait queue stands, as CoDel does
// and as described in "Fail at Scale": while some caller found the queue empty
// within the last interval, a caller waits as long as its context allows;
// once none has for longer than interval, a caller waits at most target and
// then fails with an error matching ErrShed and semaphore.ErrTimedOut. The
// callers cut short are counted in Stats.Shed; they are not samples (they never
// reached the backend). Typical values: 5ms and 100ms. It panics unless
// 0 < target and 0 < interval.
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
	now := time.Now()
	if l.sem.Waiters() == 0 {
		l.lastEmpty.Store(now.UnixNano())
	}
	if now.UnixNano()-l.lastEmpty.Load() <= int64(l.cfg.standingInterval) {
		return l.sem.Acquire(ctx, 1)
	}
	wctx, cancel := context.WithTimeout(ctx, l.cfg.standingTarget)
	err := l.sem.Acquire(wctx, 1)
	cancel()
	if err != nil && ctx.Err() == nil {
		l.mu.Lock()
		l.shed++
		l.mu.Unlock()
		return fmt.Errorf("adaptive %q: wait in a queue standing for over %v: %w", l.cfg.name, l.cfg.standingInterval, errors.Join(ErrShed, err))
	}
	return err
}
