package semaphore

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/list"
)

// diagnostics is the opt-in state behind holder tracking, leak detection and the
// watchdog.
type diagnostics struct {
	sem *Semaphore
	cfg trackConfig // fixed after New

	mu      sync.Mutex        // guards the holder list
	holders list.List[holder] // tracked Units not yet collected, oldest first
	swept   int               // length of the list after the last sweep

	// joined holds when each waiter in the list joined it, since epoch; guarded by
	// sem.mu. A map rather than a field of the waiter, so that a waiter stays 64
	// bytes whether or not diagnostics are on.
	joined     map[*waiter]time.Duration
	joinedPeak int           // the most entries joined has held; guarded by sem.mu
	watch      watchdogState // guarded by sem.mu; see watchdog.go
}

func (s *Semaphore) newDiagnostics(cfg trackConfig) *diagnostics {
	if cfg.leakSet && cfg.leak == nil {
		s.panicf("WithLeakDetection(nil): the report function must not be nil")
	}
	if cfg.watch != nil {
		cfg.watch.validate(s)
	}
	if cfg.leak != nil || cfg.watch != nil {
		cfg.holders = true
	}
	if !cfg.holders {
		return nil
	}
	return &diagnostics{sem: s, cfg: cfg, joined: make(map[*waiter]time.Duration)}
}

// Diagnostics renders a dump of the semaphore for a human deciding why calls wait.
// Its first line names the problem, for example
//
//	semaphore "db": head waiter wants 4 units (waiting 2s), 1 available, 3 held by 2 holders for 12s (oldest: db.go:41)
//
// followed by the capacity, availability and wait list in numbers, the holders
// grouped by label and acquire site (oldest group first, with their count, units
// and the age of the oldest), and the waiters in queue order with their units and
// how long they have waited. Each table shows at most maxLines rows and sums the
// rest in a last row; maxLines <= 0 means no limit.
//
// Holders and waiting times are known only with holder tracking on
// (WithHolderTracking, or an option that implies it); without it the dump says so
// and shows what the semaphore knows. The state is read under the semaphore's lock,
// so the dump is one consistent snapshot; Diagnostics never blocks on anything but
// that lock, and costs O(holders + waiters).
func (s *Semaphore) Diagnostics(maxLines int) string {
	snap := s.snapshot()
	var b strings.Builder
	b.WriteString(s.label())
	b.WriteString(": ")
	b.WriteString(snap.headline())
	b.WriteByte('\n')
	fmt.Fprintf(&b, "capacity %d, available %d, held %d, waiters %d (%s)\n",
		snap.capacity, snap.available(), snap.held(), len(snap.waiters), errs.Count(snap.waitUnits, "unit"))
	if snap.avail < 0 {
		fmt.Fprintf(&b, "in debt by %s after Consume or a shrinking Resize\n", errs.Count(-snap.avail, "unit"))
	}
	snap.writeHolders(&b, maxLines)
	snap.writeWaiters(&b, maxLines)
	return b.String()
}

// snapshot is the state a dump is made from, copied under the locks.
type snapshot struct {
	now       time.Duration // since epoch
	capacity  int64
	avail     int64 // may be negative
	broken    *breakState
	tracked   bool
	waiters   []waiterRow
	waitUnits int64
	holders   []holderRow
	holdUnits int64 // units held by tracked Units
}

type waiterRow struct {
	n     int64
	since time.Duration
}

type holderRow struct {
	n     int64
	since time.Duration
	h     *holder // for label and site, which are fixed: read after unlocking
}

func (s *Semaphore) snapshot() snapshot {
	snap := snapshot{tracked: s.diag != nil}
	s.mu.Lock()
	snap.now = time.Since(epoch)
	st := s.state.Load()
	snap.capacity, snap.avail, snap.broken = s.capacity.Load(), unitsOf(st), s.brokenState()
	for w := s.waiting.Front(); w != nil; w = w.link.Next() {
		n := w.n.Load()
		row := waiterRow{n: n}
		if s.diag != nil {
			row.since = s.diag.joined[w]
		}
		snap.waiters = append(snap.waiters, row)
		snap.waitUnits += n
	}
	if d := s.diag; d != nil {
		// Lock order: s.mu, then d.mu. Holder updates take d.mu alone.
		d.mu.Lock()
		for h := d.holders.Front(); h != nil; h = h.link.Next() {
			if n := h.u.Value().Count(); n > 0 { // Count is 0 for a collected (nil) Units
				snap.holders = append(snap.holders, holderRow{n: n, since: h.since, h: h})
				snap.holdUnits += n
			}
		}
		d.mu.Unlock()
	}
	s.mu.Unlock()
	return snap
}

// held is the units held or consumed: what Drain waits for. After Break the state
// word goes on counting the units that come back, so this holds then too.
func (snap *snapshot) held() int64 { return snap.capacity - snap.avail }

// available is what Available reported at the snapshot: never negative, 0 once
// broken.
func (snap *snapshot) available() int64 {
	if snap.broken != nil {
		return 0
	}
	return max(snap.avail, 0)
}

// headline names the problem: the head waiter and who holds what it needs.
func (snap *snapshot) headline() string {
	var b strings.Builder
	switch {
	case snap.broken != nil:
		b.WriteString("broken")
		if snap.broken.cause != nil {
			b.WriteString(" (" + errs.Cause(snap.broken.cause) + ")")
		}
		b.WriteString(", ")
	case len(snap.waiters) == 0:
		fmt.Fprintf(&b, "no waiters, %d of %d available, ", snap.available(), snap.capacity)
	default:
		head := snap.waiters[0]
		fmt.Fprintf(&b, "head waiter wants %s", errs.Count(head.n, "unit"))
		if snap.tracked {
			fmt.Fprintf(&b, " (waiting %v)", errs.Round(snap.now-head.since))
		}
		fmt.Fprintf(&b, ", %d available, ", snap.available())
	}
	held := snap.held()
	fmt.Fprintf(&b, "%d held", held)
	if !snap.tracked {
		b.WriteString(" (holders not tracked)")
		return b.String()
	}
	if len(snap.holders) == 0 {
		if held > 0 {
			b.WriteString(" outside Units")
		}
		return b.String()
	}
	oldest := snap.holders[0] // the list is in acquire order
	for _, h := range snap.holders {
		if h.since < oldest.since {
			oldest = h
		}
	}
	if snap.holdUnits != held {
		fmt.Fprintf(&b, ", %d of them", snap.holdUnits)
	}
	fmt.Fprintf(&b, " by %d holder", len(snap.holders))
	if len(snap.holders) != 1 {
		b.WriteByte('s')
	}
	fmt.Fprintf(&b, " for %v (oldest: %s)", errs.Round(snap.now-oldest.since), oldest.h.where())
	return b.String()
}

// holderGroup is the holders that share a label and acquire site.
type holderGroup struct {
	where   string
	holders int
	units   int64
	oldest  time.Duration // since epoch
}

func (snap *snapshot) writeHolders(b *strings.Builder, maxLines int) {
	if !snap.tracked {
		b.WriteString("holders: not tracked (WithHolderTracking)\n")
		return
	}
	if len(snap.holders) == 0 {
		b.WriteString("holders: none tracked\n")
		return
	}
	index := map[string]int{}
	var groups []holderGroup
	for _, h := range snap.holders {
		where := h.h.where()
		i, ok := index[where]
		if !ok {
			i = len(groups)
			index[where] = i
			groups = append(groups, holderGroup{where: where, oldest: h.since})
		}
		g := &groups[i]
		g.holders++
		g.units += h.n
		g.oldest = min(g.oldest, h.since)
	}
	slices.SortStableFunc(groups, func(x, y holderGroup) int {
		return cmp.Or(cmp.Compare(x.oldest, y.oldest), cmp.Compare(y.units, x.units))
	})
	fmt.Fprintf(b, "holders (%d, %s), by site, oldest first:\n", len(snap.holders), errs.Count(snap.holdUnits, "unit"))
	b.WriteString("  holders  units  oldest    site\n")
	for i, g := range groups {
		if maxLines > 0 && i == maxLines {
			rest := holderGroup{}
			for _, g := range groups[i:] {
				rest.holders += g.holders
				rest.units += g.units
			}
			fmt.Fprintf(b, "  %-7d  %-5d  ...       %d more sites\n", rest.holders, rest.units, len(groups)-i)
			break
		}
		fmt.Fprintf(b, "  %-7d  %-5d  %-8v  %s\n", g.holders, g.units, errs.Round(snap.now-g.oldest), g.where)
	}
}

func (snap *snapshot) writeWaiters(b *strings.Builder, maxLines int) {
	if len(snap.waiters) == 0 {
		b.WriteString("waiters: none\n")
		return
	}
	b.WriteString("waiters, head first:\n  position  units  waiting\n")
	for i, w := range snap.waiters {
		if maxLines > 0 && i == maxLines {
			var rest int64
			for _, w := range snap.waiters[i:] {
				rest += w.n
			}
			fmt.Fprintf(b, "  %d more waiters, %s\n", len(snap.waiters)-i, errs.Count(rest, "unit"))
			break
		}
		age := "?"
		if snap.tracked {
			age = errs.Round(snap.now - w.since).String()
		}
		fmt.Fprintf(b, "  %-8d  %-5d  %s\n", i+1, w.n, age)
	}
}
