package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/fuzzprog"
)

// FuzzSemaphoreModel drives the semaphore and a sequential reference model with the
// same random program and checks, after every step, that they agree: which calls
// were granted or failed and how (so grants are FIFO and no wakeup is lost), how many
// wait, how many units are available, what every holder owns (so units are neither
// created nor destroyed), and the counters. It runs in a synctest bubble, so timeouts
// happen on a fake clock and every step ends with all goroutines settled.
func FuzzSemaphoreModel(f *testing.F) {
	for _, seed := range [][]byte{
		{0x02, 0x03, 0, 2, 0, 2, 1, 1, 1, 7, 0, 4, 0, 0, 8},
		{0x81, 0x02, 1, 2, 5, 1, 2, 6, 1, 1, 0, 3, 8, 8, 4, 0, 0},
		{0x00, 0x04, 5, 6, 0, 3, 2, 1, 0, 2, 6, 2, 6, 5, 4, 1, 1, 4, 0, 2},
		{0x83, 0x01, 0, 1, 0, 1, 0, 1, 0, 1, 9, 0, 7, 1, 3, 1},
		{0x00, 0x05, 2, 3, 2, 2, 4, 2, 2, 4, 0, 3, 4, 0, 1, 4, 1, 3, 9, 3},
		{0x00, 0x03, 10, 3, 2, 1, 11, 2, 12, 1, 0, 4, 0, 0, 4, 0, 0, 9, 8},
		// Break, then Drain while holders return their units; a zero timeout; an
		// over-release before and after the break.
		{0x00, 0x03, 4, 2, 0, 1, 0, 1, 3, 0, 10, 1, 12, 0, 11, 0, 9, 0, 11, 0, 12, 1, 5, 0, 0, 2, 5, 0, 0, 1},
		// A Drain cancelled while units are out, then one that completes.
		{0x00, 0x02, 4, 2, 11, 0, 11, 1, 11, 0, 6, 1, 5, 0, 0, 2, 5, 0, 0, 1, 10, 2, 10, 3},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) < 2 || len(prog) > 400 {
			return
		}
		synctest.Test(t, func(t *testing.T) { runProgram(t, prog) })
	})
}

type callKind int

const (
	byContext    callKind = iota // Acquire with a cancellable context
	byBackground                 // Acquire with context.Background: parks without a context
	byTimeout                    // AcquireTimeout
	byUnits                      // AcquireUnits with a cancellable context
)

type outcome string

const (
	waiting   outcome = ""
	granted   outcome = "granted"
	timedOut  outcome = "timed out"
	cancelled outcome = "cancelled"
	broken    outcome = "broken"
	tooLarge  outcome = "too large"
	queueFull outcome = "queue full"
)

func classify(err error) outcome {
	switch {
	case err == nil:
		return granted
	case errors.Is(err, semaphore.ErrBroken):
		return broken
	case errors.Is(err, semaphore.ErrTimedOut):
		return timedOut
	case errors.Is(err, context.Canceled):
		return cancelled
	case errors.Is(err, semaphore.ErrTooLarge):
		return tooLarge
	case errors.Is(err, semaphore.ErrQueueFull):
		return queueFull
	}
	return outcome("unexpected: " + err.Error())
}

type call struct {
	id       int
	kind     callKind
	n        int64
	cancel   context.CancelFunc
	deadline time.Time
	result   chan callResult
	want     outcome // what the model says happened; waiting while queued
}

type callResult struct {
	err error
	u   *semaphore.Units
}

// holding is units held by the test: plain counts (from Acquire, TryAcquire,
// Consume) or a Units.
type holding struct {
	n int64
	u *semaphore.Units
}

type harness struct {
	t    *testing.T
	s    *semaphore.Semaphore
	log  []string
	next int

	// The model.
	capacity, avail int64
	maxWaiters      int
	queue           []*call
	broken          bool
	holds           []*holding
	pending         []*call // calls whose goroutine has not been seen to return
	acquired        uint64
	drains          []*drainCall // Drain calls that have not been seen to return
}

// drainCall is a Drain running on its own goroutine with a cancellable context.
type drainCall struct {
	id        int
	cancel    context.CancelFunc
	cancelled bool // the model cancelled it while units were out
	result    chan error
}

// out is the model's units held or consumed.
func (h *harness) out() int64 { return h.capacity - h.avail }

func runProgram(t *testing.T, prog []byte) {
	h := &harness{t: t, capacity: int64(prog[1] % 6), maxWaiters: -1}
	opts := []semaphore.Option{semaphore.WithName("model")}
	if prog[0]&0x80 != 0 {
		h.maxWaiters = int(prog[0] % 4)
		opts = append(opts, semaphore.WithMaxWaiters(h.maxWaiters))
	}
	h.avail = h.capacity
	h.s = semaphore.New(h.capacity, opts...)
	r := fuzzprog.New(prog[2:])
	for r.More() {
		h.step(r)
		h.check()
	}
	h.drain()
}

func (h *harness) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("%s\nafter:\n  %s", fmt.Sprintf(format, args...), strings.Join(h.log, "\n  "))
}

func (h *harness) step(r *fuzzprog.Reader) {
	switch op := r.Byte() % 13; op {
	case 0, 1, 2, 3:
		h.start(callKind(op), int64(r.Byte()%6), r.Byte())
	case 4:
		n := int64(r.Byte() % 4)
		ok := h.s.TryAcquire(n)
		want := !h.broken && len(h.queue) == 0 && h.avail >= n
		h.logf("TryAcquire(%d) = %v", n, ok)
		if ok != want {
			h.fatalf("TryAcquire(%d) = %v, model says %v", n, ok, want)
		}
		if ok {
			h.avail -= n
			h.acquired++
			h.holds = append(h.holds, &holding{n: n})
		}
	case 5:
		h.release(r.Byte(), r.Byte(), r.Byte())
	case 6:
		n := int64(r.Byte() % 4)
		h.logf("Consume(%d)", n)
		h.s.Consume(n)
		h.avail -= n // counted after Break too, for Drain
		h.holds = append(h.holds, &holding{n: n})
	case 7:
		c := int64(r.Byte() % 6)
		h.logf("Resize(%d)", c)
		h.s.Resize(c)
		if !h.broken {
			h.avail += c - h.capacity
			h.capacity = c
			for _, w := range append([]*call(nil), h.queue...) {
				if w.n > c {
					h.leave(w, tooLarge)
				}
			}
			h.grant()
		}
	case 8:
		h.cancelOrExpire(r.Byte())
	case 9:
		if r.Byte()%4 != 0 {
			return // keep Break rare: it ends the interesting part of a program
		}
		h.logf("Break")
		h.s.Break(errors.New("model break"))
		h.broken = true
		for _, w := range append([]*call(nil), h.queue...) {
			h.leave(w, broken)
		}
	case 10:
		h.tryTimeout(int64(r.Byte() % 7))
	case 11:
		h.drainOrCancel(r.Byte())
	case 12:
		h.overRelease(int64(r.Byte() % 3))
	}
	synctest.Wait()
}

// tryTimeout is AcquireTimeout(0, n): decided at once, in the contract's order,
// without ever queuing.
func (h *harness) tryTimeout(n int64) {
	err := h.s.AcquireTimeout(0, n)
	want := timedOut
	switch {
	case h.broken:
		want = broken
	case n > h.capacity:
		want = tooLarge
	case len(h.queue) == 0 && h.avail >= n:
		want = granted
	}
	h.logf("AcquireTimeout(0, %d) = %v", n, err)
	if got := classify(err); got != want {
		h.fatalf("AcquireTimeout(0, %d): got %q, model says %q", n, got, want)
	}
	if want == granted {
		h.avail -= n
		h.acquired++
		h.holds = append(h.holds, &holding{n: n})
	}
}

// drainOrCancel starts a Drain, or cancels the oldest one still waiting.
func (h *harness) drainOrCancel(pick byte) {
	if pick%2 == 1 && len(h.drains) > 0 {
		d := h.drains[0]
		h.logf("drain #%d cancel", d.id)
		d.cancel()
		d.cancelled = true
		return
	}
	h.next++
	ctx, cancel := context.WithCancel(context.Background())
	d := &drainCall{id: h.next, cancel: cancel, result: make(chan error, 1)}
	h.logf("drain #%d start (%d out)", d.id, h.out())
	go func() { d.result <- h.s.Drain(ctx) }()
	h.drains = append(h.drains, d)
}

// overRelease releases more than is out: a panic that changes nothing on a healthy
// semaphore; on a broken one, no panic, and the count stops at the capacity.
func (h *harness) overRelease(extra int64) {
	n := h.out() + 1 + extra
	msg, ok := panics(func() { h.s.Release(n) })
	h.logf("Release(%d) with %d out: panic %v", n, h.out(), ok)
	if h.broken {
		if ok {
			h.fatalf("Release(%d) after Break panicked: %s", n, msg)
		}
		h.avail = h.capacity
		return
	}
	if !ok || !strings.Contains(msg, "released more than held") {
		h.fatalf("Release(%d) with %d out: panic %q, want released more than held", n, h.out(), msg)
	}
}

// checkDrains: a Drain returns nil once nothing is out, and an error only when
// cancelled while units were out.
func (h *harness) checkDrains() {
	still := h.drains[:0]
	for _, d := range h.drains {
		select {
		case err := <-d.result:
			switch {
			case err == nil && h.out() <= 0:
			case err != nil && d.cancelled && errors.Is(err, context.Canceled):
			default:
				h.fatalf("drain #%d returned %v with %d out (cancelled %v)", d.id, err, h.out(), d.cancelled)
			}
			d.cancel()
		default:
			if h.out() <= 0 || d.cancelled {
				h.fatalf("drain #%d still waits with %d out (cancelled %v)", d.id, h.out(), d.cancelled)
			}
			still = append(still, d)
		}
	}
	h.drains = still
}

// start begins an acquire of kind k on its own goroutine and predicts its fate.
func (h *harness) start(k callKind, n int64, arg byte) {
	h.next++
	c := &call{id: h.next, kind: k, n: n, result: make(chan callResult, 1)}
	ctx := context.Background()
	var d time.Duration
	switch k {
	case byContext, byUnits:
		ctx, c.cancel = context.WithCancel(ctx)
	case byTimeout:
		c.deadline = h.uniqueDeadline(time.Duration(arg%4+1) * time.Second)
		d = time.Until(c.deadline)
	}
	h.logf("#%d start kind=%d n=%d (available %d of %d, %d queued)", c.id, k, n, h.avail, h.capacity, len(h.queue))
	go func() {
		var res callResult
		switch k {
		case byContext, byBackground:
			res.err = h.s.Acquire(ctx, n)
		case byTimeout:
			res.err = h.s.AcquireTimeout(d, n)
		case byUnits:
			res.u, res.err = h.s.AcquireUnits(ctx, n)
		}
		c.result <- res
	}()
	h.pending = append(h.pending, c)
	switch {
	case h.broken:
		c.want = broken
	case n > h.capacity:
		c.want = tooLarge
	case len(h.queue) == 0 && h.avail >= n:
		c.want = granted
		h.avail -= n
		h.acquired++
	case h.maxWaiters >= 0 && len(h.queue) >= h.maxWaiters:
		c.want = queueFull
	default:
		h.queue = append(h.queue, c)
	}
}

// uniqueDeadline keeps timed waiters' deadlines distinct, so that each advance of the
// fake clock expires exactly one of them and the order of events is fixed.
func (h *harness) uniqueDeadline(d time.Duration) time.Time {
	at := time.Now().Add(d)
	for again := true; again; {
		again = false
		for _, c := range h.pending {
			if c.deadline.Equal(at) {
				at = at.Add(time.Microsecond)
				again = true
			}
		}
	}
	return at
}

// release gives back some of what a holder owns, in one of the ways a holder can.
func (h *harness) release(pick, how, amount byte) {
	if len(h.holds) == 0 {
		return
	}
	i := int(pick) % len(h.holds)
	hd := h.holds[i]
	k := int64(amount) % (hd.n + 1)
	giveBack := int64(0)
	switch {
	case hd.u == nil:
		h.logf("Release(%d) of plain %d", k, hd.n)
		h.s.Release(k)
		hd.n -= k
		giveBack = k
	case how%4 == 0:
		h.logf("Units.Release of %d", hd.n)
		hd.u.Release()
		hd.u.Release() // idempotent
		giveBack, hd.n = hd.n, 0
	case how%4 == 1:
		h.logf("Units.Return(%d) of %d", k+1, hd.n)
		err := hd.u.Return(k + 1)
		if k+1 > hd.n {
			require.ErrorIs(h.t, err, semaphore.ErrInsufficientUnits)
		} else {
			require.NoError(h.t, err)
			hd.n -= k + 1
			giveBack = k + 1
		}
	case how%4 == 2:
		h.logf("Units.Split(%d) of %d", k, hd.n)
		part, err := hd.u.Split(k)
		require.NoError(h.t, err)
		hd.n -= k
		h.holds = append(h.holds, &holding{n: k, u: part})
	default:
		j := int(amount) % len(h.holds)
		other := h.holds[j]
		if other.u == nil || j == i {
			return
		}
		h.logf("Units.Adopt(%d) into %d", other.n, hd.n)
		require.NoError(h.t, hd.u.Adopt(other.u))
		hd.n += other.n
		other.n = 0
	}
	if !h.broken {
		h.avail += giveBack
		h.grant()
	} else {
		h.avail = min(h.avail+giveBack, h.capacity) // counted for Drain, never past the capacity
	}
	h.dropEmpty()
}

func (h *harness) dropEmpty() {
	kept := h.holds[:0]
	for _, hd := range h.holds {
		if hd.n > 0 {
			kept = append(kept, hd)
		}
	}
	h.holds = kept
}

// cancelOrExpire ends one queued wait: a context waiter by cancellation, or, when
// none can be cancelled, the timed waiter with the earliest deadline by moving the
// fake clock to it.
func (h *harness) cancelOrExpire(pick byte) {
	var cancellable []*call
	var earliest *call
	for _, c := range h.queue {
		if c.cancel != nil {
			cancellable = append(cancellable, c)
		}
		if !c.deadline.IsZero() && (earliest == nil || c.deadline.Before(earliest.deadline)) {
			earliest = c
		}
	}
	if len(cancellable) > 0 && (pick%2 == 0 || earliest == nil) {
		c := cancellable[int(pick/2)%len(cancellable)]
		h.logf("#%d cancel", c.id)
		c.cancel()
		h.leave(c, cancelled)
		return
	}
	if earliest != nil {
		h.logf("#%d expire", earliest.id)
		time.Sleep(time.Until(earliest.deadline))
		h.leave(earliest, timedOut)
	}
}

// leave removes a queued call with a failure and lets the ones behind it in.
func (h *harness) leave(c *call, o outcome) {
	for i, q := range h.queue {
		if q == c {
			h.queue = append(h.queue[:i], h.queue[i+1:]...)
			break
		}
	}
	c.want = o
	h.grant()
}

// grant is the model's FIFO rule: grant from the head while it fits.
func (h *harness) grant() {
	for len(h.queue) > 0 && !h.broken && h.avail >= h.queue[0].n {
		c := h.queue[0]
		h.queue = h.queue[1:]
		h.avail -= c.n
		h.acquired++
		c.want = granted
	}
}

// check compares the real semaphore with the model once every goroutine settled.
func (h *harness) check() {
	h.t.Helper()
	still := h.pending[:0]
	for _, c := range h.pending {
		var got outcome
		select {
		case res := <-c.result:
			got = classify(res.err)
			if got == granted {
				hd := &holding{n: c.n, u: res.u}
				if c.kind == byUnits {
					require.Equal(h.t, c.n, res.u.Count())
				}
				h.holds = append(h.holds, hd)
			}
		default:
		}
		if got != c.want {
			h.fatalf("call #%d (kind %d, n=%d): got %q, model says %q", c.id, c.kind, c.n, got, c.want)
		}
		if got == waiting {
			still = append(still, c)
		} else if c.cancel != nil {
			c.cancel()
		}
	}
	h.pending = still
	h.dropEmpty()

	if got := h.s.Waiters(); got != len(h.queue) {
		h.fatalf("Waiters() = %d, model has %d queued", got, len(h.queue))
	}
	h.checkDrains()
	if h.broken {
		require.Zero(h.t, h.s.Available())
		return
	}
	if got, want := h.s.Available(), max(h.avail, 0); got != want {
		h.fatalf("Available() = %d, model says %d", got, want)
	}
	if len(h.queue) > 0 && h.avail >= h.queue[0].n {
		h.fatalf("model bug: head fits but waits")
	}
	held := int64(0)
	for _, hd := range h.holds {
		if hd.u != nil && hd.u.Count() != hd.n {
			h.fatalf("a Units holds %d, model says %d", hd.u.Count(), hd.n)
		}
		held += hd.n
	}
	if h.avail+held != h.capacity {
		h.fatalf("units not conserved: available %d + held %d != capacity %d", h.avail, held, h.capacity)
	}
	if got := h.s.Stats().Acquired; got != h.acquired {
		h.fatalf("Stats().Acquired = %d, model counts %d", got, h.acquired)
	}
}

// drain ends every wait and returns every unit, then checks the semaphore is whole.
func (h *harness) drain() {
	for len(h.pending) > 0 || len(h.holds) > 0 {
		for len(h.holds) > 0 {
			h.release(0, 0, byte(h.holds[0].n)) // all of the first holding
		}
		// Background waiters cannot give up: they are granted once the units
		// come back. End every other wait, earliest deadline first.
		for h.endableWaits() > 0 {
			h.cancelOrExpire(0)
			synctest.Wait()
		}
		synctest.Wait()
		h.check()
		if len(h.holds) == 0 && len(h.queue) > 0 && !h.broken {
			h.fatalf("stuck: %d queued with %d available", len(h.queue), h.avail)
		}
	}
	if !h.broken {
		require.Equal(h.t, h.capacity, h.s.Available(), "everything drains back to the capacity")
	}
	require.Zero(h.t, h.s.Waiters())
	require.Empty(h.t, h.drains, "every Drain returned once everything was back")
	require.NoError(h.t, h.s.Drain(context.Background()))
}

func (h *harness) endableWaits() int {
	n := 0
	for _, c := range h.queue {
		if c.cancel != nil || !c.deadline.IsZero() {
			n++
		}
	}
	return n
}
