package semaphore

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore/internal/errs"
)

// A LeakReport describes a Units that became unreachable while it still held
// units: someone forgot to Release it. Go has no destructors, so a Units is only as
// safe as the defer that releases it; leak detection finds where it was missing.
type LeakReport struct {
	Semaphore *Semaphore
	Units     int64         // units the Units held when it was dropped
	Age       time.Duration // from the acquire to the report
	Label     string        // from ContextWithHolderLabel, or ""
	Site      string        // the acquire site, "file.go:41"
	Stack     string        // the acquire's stack, with WithAcquireStacks; else ""

	u *Units // the dropped Units, kept by the report for Reclaim
}

// String describes the leak in one line, for example
// `semaphore "db": 2 units leaked by a Units acquired at main.go:41 (worker-3) 5s ago`.
func (r LeakReport) String() string {
	str := fmt.Sprintf("%s: %s leaked by a Units acquired at %s", r.Semaphore.label(), errs.Count(r.Units, "unit"), r.Site)
	if r.Label != "" {
		str += " (" + r.Label + ")"
	}
	return str + fmt.Sprintf(" %v ago", errs.Round(r.Age))
}

// Reclaim returns the leaked units to the semaphore, as the forgotten Release
// would have. Leak detection never does so by itself: a leak is a bug, and
// returning the units silently would hide it. Reclaim is idempotent.
func (r LeakReport) Reclaim() { r.u.Release() }

// collected is the finalizer of a tracked Units: it unlists its holder record and
// reports the units it still held, if any.
func (u *Units) collected() {
	h := u.h
	d := h.d
	d.mu.Lock()
	d.holders.Remove(&h.link)
	d.mu.Unlock()
	n := atomic.LoadInt64(&u.n)
	if n <= 0 || d.cfg.leak == nil {
		return
	}
	d.cfg.leak(LeakReport{
		Semaphore: d.sem,
		Units:     n,
		Age:       time.Since(epoch) - h.since,
		Label:     h.label,
		Site:      h.site(),
		Stack:     h.stack(),
		u:         u,
	})
}
