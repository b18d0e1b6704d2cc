package semaphore

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"weak"

	"github.com/fairsem/semaphore/internal/list"
)

// Holder tracking records, for each Units of a semaphore created with
// WithHolderTracking (or an option that implies it), how many units it holds, since
// when, where it was acquired and the label its context carried, so that
// Diagnostics can say who holds the units a waiter is waiting for.
//
// Only Units are tracked: AcquireUnits, TryAcquireUnits, ConsumeUnits, Units.Split
// and WithSemaphore. A plain Acquire/Release pair gives nothing to follow the units
// by, so its units appear in dumps as held outside Units.
//
// Cost, only when on: each tracked Units is allocated on the heap with a holder
// record and a weak pointer (and a finalizer with leak detection); the acquire
// site is one runtime.Callers call (a full stack with WithAcquireStacks);
// registering takes a mutex of the tracker's own. Releasing costs nothing more. A
// record stays listed until its Units is collected, so the list holds the live
// Units plus those released since the last collection; dumps skip the ones
// holding nothing.
// Without tracking, Acquire, Release and the Units methods are unchanged.

// trackConfig is what the tracking options set.
type trackConfig struct {
	holders bool              // WithHolderTracking, or implied by the options below
	stacks  bool              // WithAcquireStacks
	leak    func(LeakReport)  // WithLeakDetection
	leakSet bool              // WithLeakDetection was given, so a nil leak is an error
	watch   *watchdogSettings // WithWatchdog
}

type holderLabelKey struct{}

// ContextWithHolderLabel returns a context that labels the Units acquired with it, on a
// semaphore with holder tracking: the label appears in Diagnostics and in leak
// reports next to the acquire site, for example a request ID or a worker's name.
func ContextWithHolderLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, holderLabelKey{}, label)
}

// holder is the record of one tracked Units. It reaches its Units only through a
// weak pointer, so that a dropped Units can still be collected, and be reported as
// leaked (see leak.go).
type holder struct {
	d     *diagnostics
	u     weak.Pointer[Units] // the Units; reads of its count are atomic
	link  list.Link[holder]   // its place in d's list; guarded by d.mu
	since time.Duration       // acquire time, since epoch; fixed
	label string              // ContextWithHolderLabel; fixed
	pcs   []uintptr           // the acquire site, or the stack with WithAcquireStacks; fixed
}

// trackedUnits builds the Units for n units just taken by a caller skip frames
// above it, and registers its holder.
func (s *Semaphore) trackedUnits(ctx context.Context, n int64, skip int) *Units {
	h := &holder{d: s.diag, since: time.Since(epoch)}
	h.label, _ = ctx.Value(holderLabelKey{}).(string)
	var pcs [32]uintptr
	depth := 1
	if s.diag.cfg.stacks {
		depth = len(pcs)
	}
	h.pcs = slices.Clone(pcs[:runtime.Callers(skip+2, pcs[:depth])])
	return h.register(n)
}

// split builds a tracked Units for units split off h's Units, with h's acquire
// time, site and label.
func (h *holder) split(n int64) *Units {
	return (&holder{d: h.d, since: h.since, label: h.label, pcs: h.pcs}).register(n)
}

// register makes h the record of a new Units of n units, and lists it until the
// Units is collected.
//
// Units.Release stays a swap and a call, unaware of tracking: the count is read
// through the weak pointer, exact at every instant whatever Return, Adopt or
// Detach did. A record leaves the list once its Units is collected: with leak
// detection, in the Units' finalizer, which must run anyway; without it, in a
// sweep when the list has doubled since the last one, which spares each Units a
// second runtime special (the runtime keeps them in a per-span list, so each one
// costs). A finalizer rather than runtime.AddCleanup because leak detection must
// read the count the Units held when it was dropped, and a cleanup cannot see its
// object.
func (h *holder) register(n int64) *Units {
	d := h.d
	u := &Units{n: n, sem: d.sem, h: h}
	h.u = weak.Make(u)
	d.mu.Lock()
	if d.cfg.leak == nil && d.holders.Len() >= 2*d.swept+64 {
		d.sweepLocked()
	}
	d.holders.PushBack(&h.link, h)
	d.mu.Unlock()
	if d.cfg.leak != nil {
		runtime.SetFinalizer(u, (*Units).collected)
	}
	return u
}

// sweepLocked unlists the records of collected Units.
func (d *diagnostics) sweepLocked() {
	for h := d.holders.Front(); h != nil; {
		next := h.link.Next()
		if h.u.Value() == nil {
			d.holders.Remove(&h.link)
		}
		h = next
	}
	d.swept = d.holders.Len()
}

// site returns the acquire site as "file.go:41", or "" if unknown.
func (h *holder) site() string {
	if len(h.pcs) == 0 {
		return ""
	}
	f, _ := runtime.CallersFrames(h.pcs[:1]).Next()
	if f.File == "" {
		return f.Function
	}
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		file = file[i+1:]
	}
	return fmt.Sprintf("%s:%d", file, f.Line)
}

// stack formats the recorded stack, one "function\n\tfile:line" pair per frame as
// runtime/debug.Stack does; "" without WithAcquireStacks.
func (h *holder) stack() string {
	if !h.d.cfg.stacks {
		return ""
	}
	var b strings.Builder
	frames := runtime.CallersFrames(h.pcs)
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return b.String()
		}
	}
}

// where names the holder for dumps: its label, quoted, and its site.
func (h *holder) where() string {
	switch site := h.site(); {
	case h.label == "":
		return site
	case site == "":
		return strconv.Quote(h.label)
	default:
		return strconv.Quote(h.label) + " (" + site + ")"
	}
}

// agesLocked returns how long the head waiter has waited and the age of the
// oldest Units holding units, 0 for none; sem.mu must be held. Lock order: sem.mu,
// then d.mu, as in Diagnostics.
func (d *diagnostics) agesLocked() (headWait, oldestHolder time.Duration) {
	now := time.Since(epoch)
	if head := d.sem.waiting.Front(); head != nil {
		headWait = now - d.joined[head]
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for h := d.holders.Front(); h != nil; h = h.link.Next() {
		if h.u.Value().Count() > 0 { // Count is 0 for a collected (nil) Units
			oldestHolder = max(oldestHolder, now-h.since)
		}
	}
	return headWait, oldestHolder
}
