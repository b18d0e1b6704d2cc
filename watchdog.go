package semaphore

import (
	"log/slog"
	"time"
)

// watchdogDumpLines bounds each table of a dump the watchdog logs.
const watchdogDumpLines = 20

// WithWatchdog logs the Diagnostics dump at Warn level to logger (slog.Default()
// when nil, looked up at each dump) when the head waiter has waited longer than
// threshold, and again at most once per every while the stall lasts: a stall
// comes with many waiters, and one dump explains them. It implies
// WithHolderTracking, so that the dump names the holders.
//
// The watchdog starts no goroutine: it arms one timer while the wait list is not
// empty, and the timer's callback checks the head, logs after releasing the
// semaphore's lock, and re-arms while someone waits. New panics if threshold or
// every is not positive.
func WithWatchdog(threshold, every time.Duration, logger *slog.Logger) Option {
	return func(c *config) {
		c.tracking.watch = &watchdogSettings{threshold: threshold, every: every, logger: logger}
	}
}

type watchdogSettings struct {
	threshold, every time.Duration
	logger           *slog.Logger // nil: slog.Default()
}

func (ws *watchdogSettings) validate(s *Semaphore) {
	if ws.threshold <= 0 {
		s.panicf("WithWatchdog(%v, %v): the threshold must be positive", ws.threshold, ws.every)
	}
	if ws.every <= 0 {
		s.panicf("WithWatchdog(%v, %v): the interval between dumps must be positive", ws.threshold, ws.every)
	}
}

// watchdogState is guarded by Semaphore.mu.
type watchdogState struct {
	timer   *time.Timer   // made on the first arm
	armed   bool          // the timer is pending; only its callback disarms it
	logged  bool          // a dump has been logged
	lastLog time.Duration // since epoch, of the last dump
}

// joinedLocked records when w joined the wait list, for dumps and for its wait
// time, and arms the watchdog if it is on and not armed yet.
func (d *diagnostics) joinedLocked(w *waiter) {
	now := time.Since(epoch)
	d.joined[w] = now
	d.joinedPeak = max(d.joinedPeak, len(d.joined))
	if ws := d.cfg.watch; ws != nil && !d.watch.armed {
		d.armLocked(d.joined[d.sem.head] + ws.threshold - now)
	}
}

// leftLocked forgets when w joined, as it leaves the list. Maps never shrink, so
// once the list is empty after a burst, a fresh map lets the burst's buckets go.
func (d *diagnostics) leftLocked(w *waiter, empty bool) {
	delete(d.joined, w)
	if empty && d.joinedPeak > 1024 {
		d.joined, d.joinedPeak = make(map[*waiter]time.Duration), 0
	}
}

func (d *diagnostics) armLocked(after time.Duration) {
	d.watch.armed = true
	if d.watch.timer == nil {
		d.watch.timer = time.AfterFunc(after, d.check)
		return
	}
	d.watch.timer.Reset(after)
}

// check is the watchdog timer's callback.
func (d *diagnostics) check() {
	s, ws := d.sem, d.cfg.watch
	s.mu.Lock()
	d.watch.armed = false
	if s.head == nil {
		s.mu.Unlock() // the next waiter to join re-arms
		return
	}
	now := time.Since(epoch)
	waited := now - d.joined[s.head]
	next := ws.threshold - waited
	dump := false
	if waited >= ws.threshold {
		if !d.watch.logged || now-d.watch.lastLog >= ws.every {
			d.watch.logged, d.watch.lastLog, dump = true, now, true
		}
		next = d.watch.lastLog + ws.every - now
	}
	d.armLocked(next)
	s.mu.Unlock()
	if !dump {
		return
	}
	logger := ws.logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Warn("semaphore: head waiter stalled",
		slog.Any("semaphore", s), slog.Duration("waited", waited),
		slog.String("diagnostics", s.Diagnostics(watchdogDumpLines)))
}
