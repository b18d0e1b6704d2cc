package semaphore

import (
	"log/slog"
	"time"
)

// watchdogDumpLines bounds each table of a dump the watchdog logs.
const watchdogDumpLines = 20

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
	timer   *time.Timer   // made when the first waiter joins an empty list; nil while the list is empty
	armed   bool          // the timer is pending; its callback, or the list emptying, disarms it
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
		d.armLocked(d.joined[d.sem.waiting.Front()] + ws.threshold - now)
	}
}

// leftLocked forgets when w joined, as it leaves the list. Once the list is empty
// it stops and drops the watchdog's timer, which would otherwise keep the
// semaphore reachable until it fired, and, since maps never shrink, replaces a
// map that a burst grew so that its buckets go.
func (d *diagnostics) leftLocked(w *waiter, empty bool) {
	delete(d.joined, w)
	if !empty {
		return
	}
	if d.watch.timer != nil {
		d.watch.timer.Stop()
		d.watch.timer, d.watch.armed = nil, false
	}
	if d.joinedPeak > 1024 {
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
	head := s.waiting.Front()
	if head == nil {
		// A callback that started before leftLocked stopped its timer.
		s.mu.Unlock()
		return
	}
	d.watch.armed = false
	now := time.Since(epoch)
	waited := now - d.joined[head]
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
