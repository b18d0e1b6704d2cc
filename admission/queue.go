package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/list"
	"github.com/fairsem/semaphore/internal/shed"
)

// waitKind is what a queued request waits for. Each kind has one name (for
// messages) and one way to be undone (undoLocked), so a new path that fails or
// gives back a wait cannot forget a case.
type waitKind uint8

const (
	admitting        waitKind = iota // a new permit in Acquire, in c.queue
	readmitting                      // an evicted permit in Readmit, in c.queue
	requestingMemory                 // an admitted permit in RequestMemory, in c.memQueue
)

// waiter is a request in the admission queue or the memory queue. Its fields are
// set before it is queued (under mu) and fixed from then on, except link and
// queued.
type waiter struct {
	p        *Permit
	kind     waitKind
	memory   int64 // what it asks for: the base memory, or RequestMemory's n
	noShed   bool
	arrived  time.Time
	deadline time.Time         // its context's deadline; zero without one
	budget   shed.Budget       // the deadline rule's view: the caller's deadline and a door's wait bound
	done     chan error        // the outcome, sent once by the settler: nil when granted
	link     list.Link[waiter] // its place in its queue while queued (guarded by mu)
	queued   bool              // in its queue; false once settled (guarded by mu)
	ahead    int               // queue length when it joined
	seq      uint64            // arrival order in its group (0 outside a group)
}

// name is the operation the waiter stands for, as messages name it.
func (w *waiter) name() string {
	switch w.kind {
	case admitting:
		return "admit"
	case readmitting:
		return "readmit"
	}
	return "request memory"
}

// what describes the waiter's request for messages.
func (w *waiter) what() string { return what(w.name(), w.p, w.memory) }

func (c *Controller) queueOf(w *waiter) *list.List[waiter] {
	if w.kind == requestingMemory {
		return &c.memQueue
	}
	return &c.queue
}

// undoLocked puts w's permit back where it was before the wait, after the wait
// failed (granted false) or after a grant that the caller will not see because its
// context ended first (granted true: give back what the grant took).
//
//   - admitting: the new permit is aborted and forgotten, its base given back if
//     granted.
//   - readmitting: the permit is evicted again (unless Release got there first).
//     A granted readmission is never undone: see wait.
//   - requestingMemory: the granted bytes are given back (unless Release already
//     gave back everything); the permit's state was settled by settleLocked.
func (c *Controller) undoLocked(w *waiter, granted bool) {
	p := w.p
	switch w.kind {
	case admitting:
		if granted {
			p.releaseBaseLocked()
		}
		p.setPhaseLocked(Aborted)
		c.forgetLocked(p)
	case readmitting:
		if p.phase != Released {
			p.setPhaseLocked(Evicted)
		}
	case requestingMemory:
		if granted && p.phase != Released {
			p.returnLocked(Resources{Memory: min(w.memory, p.consumed.Memory)})
		}
	}
}

func (c *Controller) enqueueLocked(ctx context.Context, w *waiter) {
	q := c.queueOf(w)
	w.arrived = time.Now()
	if dl, ok := ctx.Deadline(); ok {
		w.deadline = dl
	}
	w.done = make(chan error, 1)
	w.ahead = q.Len()
	if g := c.group; g != nil {
		g.seq++
		w.seq = g.seq
	}
	q.PushBack(&w.link, w)
	w.queued = true
	if w.kind == requestingMemory {
		w.p.memWaits++
		w.p.setPhaseLocked(WaitingForMemory)
	} else {
		w.p.wait = w
		w.p.setPhaseLocked(WaitingForAdmission)
	}
}

// settleLocked removes w from its queue and delivers the outcome: nil when granted
// (the granter has already given the permit what it asked for), else the error, in
// which case the wait is undone.
func (c *Controller) settleLocked(w *waiter, err error) {
	c.queueOf(w).Remove(&w.link)
	w.queued = false
	p := w.p
	if w.kind == requestingMemory {
		p.memWaits--
		if p.memWaits == 0 && p.phase == WaitingForMemory {
			p.setPhaseLocked(Active)
		}
	} else {
		p.wait = nil
	}
	if err != nil {
		c.undoLocked(w, false)
	}
	w.done <- err // buffered, and sent once: never blocks
}

// wait blocks until w is settled or ctx ends. It is called without mu and returns
// without it.
//
// A request granted while its context is already done fails with the context's
// error and gives back what it was granted, so that the requests behind it are
// let in as they would have been, as the semaphore package's Acquire does;
// whichever case select picks when both happened, the answer is the same. A
// readmission is the exception: it keeps its grant and returns nil, because once
// the permit is Active other goroutines may already be using it.
func (c *Controller) wait(ctx context.Context, w *waiter) error {
	var err error
	select {
	case err = <-w.done:
		select {
		case <-ctx.Done():
		default:
			return err
		}
		c.lock()
	case <-ctx.Done():
		c.lock()
		if w.queued {
			// Still queued: leave, and let in whoever that lets in.
			err := c.contextErrLocked(ctx, w)
			c.settleLocked(w, err)
			<-w.done
			c.maybeAdmitLocked() // if it was the head, the ones behind may fit now
			c.unlock()
			return err
		}
		// Settled before we got the lock: settleLocked sent the outcome under it.
		err = <-w.done
	}
	defer c.unlock()
	if err != nil || w.kind == readmitting {
		return err
	}
	err = c.contextErrLocked(ctx, w)
	if w.kind == admitting {
		c.stats.Acquired-- // counted when granted; the caller sees its context error
	}
	c.undoLocked(w, true)
	c.maybeAdmitLocked()
	return err
}

// contextErrLocked is the error for a request whose context ended, before it
// queued or while it waited: it matches ctx.Err(), context.Cause(ctx) when that
// differs, and semaphore.ErrTimedOut for a deadline, and ends in TimedOut or
// Cancelled, which it counts. It reads the controller's usage, so it needs mu.
func (c *Controller) contextErrLocked(ctx context.Context, w *waiter) error {
	deadline, why, matches := errs.Context(ctx)
	o, what := semaphore.Cancelled, "canceled"
	if deadline {
		o, what = semaphore.TimedOut, "timed out"
		matches = append(matches, semaphore.ErrTimedOut)
		c.stats.TimedOut++
		c.dumpLocked("timed out", w.p)
	} else {
		c.stats.Cancelled++
	}
	if w.arrived.IsZero() {
		what += " before waiting"
	} else {
		what += fmt.Sprintf(" after %v, queued behind %s (%s)",
			time.Since(w.arrived).Round(time.Millisecond), errs.Count(int64(w.ahead), "request"), c.usageLocked())
	}
	return c.fail(o, w.what(), what+": "+why, matches...)
}
