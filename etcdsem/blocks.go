package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
)

// WithBlocks makes the handle take units from etcd in blocks of at least size
// units and grant them to its callers locally, with the core semaphore: a
// grant costs no round trip while the handle's blocks have units free. A block
// is one acquire in the semaphore's queue, like any holder's, so the capacity
// holds across the fleet at every revision; the package doc says how blocks
// follow demand and what stays exact. Block mode fits many grants per second
// per process; plain mode (the default) fits few holders and strict FIFO
// across the fleet.
//
// In block mode Acquire is granted from the handle's blocks, with no RPC, when
// they have n units free and none of the handle's callers waits; otherwise it
// waits in FIFO order behind them while the handle asks etcd for a block. It
// fails as in plain mode, and with ErrLost if a block of the handle is lost
// while it waits. TryAcquire takes free units of the blocks when none of the
// handle's callers waits, with no RPC; with none free it asks etcd for a
// block without queueing (max(n, size) units, then n). Release and Return
// give units back to the blocks, with no RPC. A call concurrent with Close may
// still be served from the blocks; once Close returns, every call fails with
// ErrClosed and Release returns nil.
//
// It panics if size is not positive or above semaphore.MaxUnits.
func WithBlocks(size int64) Option {
	if size <= 0 || size > semaphore.MaxUnits {
		panic(fmt.Sprintf("etcdsem: WithBlocks(%d): block size out of range [1, %d]", size, int64(semaphore.MaxUnits)))
	}
	return func(c *config) { c.blockSize = size }
}

// A blockPool grants a block-mode Semaphore's callers units of its blocks.
// A block is an acquire of the handle like any other (a key in the queue, the
// handle's Units); the callers wait for units of the blocks on the core
// semaphore of the current epoch (see ledger.go), which the pool feeds as
// blocks come and takes units back from as they go, so the core's wait list
// and its rules (FIFO, a try never jumps a waiter, a grant that races a
// cancellation goes back, Break, Resize) are the callers'. The callers' path
// touches atomics and the core only; the manager (blockdemand.go), one
// goroutine with state of its own, asks the handle for blocks and gives units
// back; the ledger, under its own lock, is where the two meet.
type blockPool struct {
	// fixed at creation
	h    *handle
	size int64
	wake chan struct{} // capacity 1: something changed, the manager should look

	// read on the callers' path
	ep        atomic.Pointer[epoch] // the current epoch; written under ledger.mu
	token     atomic.Int64          // the highest block token ever held: only grows
	seq       atomic.Int64          // numbers local grants, across epochs
	seen      atomic.Pointer[seen]  // the mirror as last applied: only ever replaced by a later revision's
	closed    atomic.Bool           // the handle closed: written under ledger.mu
	contended atomic.Bool           // releases wake the manager: it gives units back as they come
	granted   atomic.Uint64         // local grants made, for the debug page and the reports

	waiting demand // the callers waiting, counted for the manager
	ledger  ledger // the blocks and the epochs: shared with the manager, under its own lock
}

// newBlockPool returns the block pool of h, with the mirror as it is now; its
// manager (newBlockManager) runs on a goroutine of h's session.
func newBlockPool(h *handle, size int64) *blockPool {
	p := &blockPool{h: h, size: size, wake: make(chan struct{}, 1)}
	p.waiting.sizes = make(map[int64]int)
	p.ep.Store(newEpoch(0))
	p.apply(h.fleetView())
	return p
}

// signal wakes the manager.
func (p *blockPool) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// acquire is Acquire in block mode: a caller takes units of the current
// epoch's core, at once if they are free and nobody waits, and otherwise
// waits on it while the manager asks etcd for a block.
func (p *blockPool) acquire(ctx context.Context, n int64) (*Units, error) {
	start := time.Now()
	c := blockCall{n: n}
	if ctx.Err() != nil {
		return nil, p.errWait(ctx, c, start)
	}
	if err := p.refuse(ctx, c, start); err != nil {
		return nil, err
	}
	ep := p.ep.Load() // a caller arriving after a loss is granted from the next epoch
	// The context is looked at once more just before the grant, so that a
	// cancellation before it always wins; the core decides every later one.
	if ctx.Err() != nil {
		return nil, p.errWait(ctx, c, start)
	}
	if ep.local.TryAcquire(n) {
		return p.grant(ep, n), nil
	}
	// It may wait: the manager counts it, and looks now.
	p.waiting.join(n)
	p.signal()
	err := ep.local.Acquire(ctx, n)
	p.waiting.leave(n)
	if err != nil {
		return nil, p.errWaited(ctx, c, start, err)
	}
	return p.grant(ep, n), nil
}

// tryAcquire is TryAcquire in block mode: free units of the current epoch if
// none of the handle's callers waits (the core never lets a try jump a
// waiter); with none free and none waiting, it asks the handle for a block
// without queueing (a plain TryAcquire of max(n, block size) units, then of
// n).
func (p *blockPool) tryAcquire(ctx context.Context, n int64) (*Units, bool, error) {
	start := time.Now()
	c := blockCall{try: true, n: n}
	if ctx.Err() != nil {
		return nil, false, p.errWait(ctx, c, start)
	}
	if err := p.refuse(ctx, c, start); err != nil {
		return nil, false, err
	}
	ep := p.ep.Load()
	if ep.local.TryAcquire(n) {
		return p.grant(ep, n), true, nil
	}
	if ep.local.Waiters() > 0 {
		return nil, false, nil // callers wait: the units of a block would be theirs
	}
	asks := []int64{n}
	if a := min(max(n, p.size), p.seen.Load().capacity); a > n {
		asks = []int64{a, n}
	}
	for _, ask := range asks {
		u, ok, err := p.h.tryAcquire(ctx, ask)
		if err != nil && ask > n {
			// Not the call's failure (a shrink since the capacity was read,
			// which n may still fit), or not in its terms: the ask for n
			// decides, and its error names the caller's units.
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if ok {
			p.addBlock(u)
			// Callers that came meanwhile were served from it first; one
			// that still waits keeps the rest.
			if ep := p.ep.Load(); ep.local.TryAcquire(n) {
				return p.grant(ep, n), true, nil
			}
			return nil, false, nil
		}
	}
	return nil, false, nil
}

// refuse returns the error of a call for n units that cannot be served: the
// handle is closed, the semaphore broken, or n above the capacity. Broken and
// too large are decided on the mirror once it has caught up with etcd, so a
// Repair or a growing Resize just before the call counts: the view is
// applied to the current epoch before it is published (apply), so a call it
// lets through finds the core as large.
func (p *blockPool) refuse(ctx context.Context, c blockCall, start time.Time) error {
	if p.closed.Load() {
		return p.errClosed(c)
	}
	if v := p.seen.Load(); v.broken == nil && c.n <= v.capacity {
		return nil
	}
	cctx, stop := p.h.sess.callContext(ctx) // Close ends the read
	defer stop()
	if err := p.h.catchUp(cctx); err != nil {
		return p.errRPC(ctx, c, start, err)
	}
	v := p.h.fleetView()
	p.apply(v)
	switch {
	case v.broken:
		return p.errBroken(c, v.reason)
	case c.n > v.capacity:
		return p.errTooLarge(c, v.capacity)
	}
	return nil
}

// grant returns the Units of a grant of n units in ep. Its fencing token is
// read after the grant: a block's token is published before its units are
// fed (addLocked), so it is at least that of every block whose units the
// grant could use. The sequence number is taken while the token stays the
// same, so that (token, sequence) orders grants as their numbers do.
func (p *blockPool) grant(ep *epoch, n int64) *Units {
	ep.inUse.Add(n)
	ep.holds.Add(1)
	p.granted.Add(1)
	h := &localHold{p: p, ep: ep}
	h.n.Store(n)
	for {
		tok := p.token.Load()
		seq := p.seq.Add(1)
		if p.token.Load() == tok {
			return &Units{h: p.h, hold: h, token: tok, seq: seq}
		}
	}
}

// apply brings the current epoch in line with v, the mirror at a revision:
// its core's capacity is v's, it is broken while the semaphore is, and a
// Repair starts the next epoch; then it publishes v for the callers' path.
// Views apply in revision order: an older one changes nothing.
func (p *blockPool) apply(v fleetView) {
	l := &p.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if v.rev < l.rev {
		return
	}
	l.rev = v.rev
	ep := p.ep.Load()
	switch {
	case p.closed.Load():
	case v.broken && ep.grants():
		ep.local.Break(&waitEnd{broken: true, reason: v.reason}) // its waiters fail; its holders keep their units
	case !v.broken && !ep.grants():
		l.capacity = v.capacity
		p.nextEpochLocked() // repaired
	}
	p.resizeLocked(v.capacity)
	p.observe(v)
}

// addBlock adds the block u, granted by etcd, to the ledger and feeds its
// units to the callers; if the handle is closing, or u was lost already, it
// hands u to the manager to give back.
func (p *blockPool) addBlock(u *Units) {
	l := &p.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := p.addLocked(u)
	if !ok {
		l.released = append(l.released, u)
		p.signal()
		return
	}
	// Closing, the session runs no watcher: the lease's revocation gives
	// the block back.
	p.h.sess.spawn(func() { p.watchBlock(b) })
}

// watchBlock ends the epochs when b is lost. Lost closes for the block's
// Units before the lease can expire on the server (see lease), and ending
// the epochs closes every local holder's Lost at once after it, within the
// safety margin.
func (p *blockPool) watchBlock(b *ledgerBlock) {
	select {
	case <-b.units.Lost():
		p.lose(b, blockLost(b.token, b.units.hold.lossCause()))
	case <-b.gone:
	case <-p.h.sess.ctx.Done():
	}
}

// lose ends every epoch, if b is still a block of the handle, because b was
// lost: every holder's Lost closes, every waiter fails with cause, and the
// other blocks are given back; the next epoch starts with no blocks.
func (p *blockPool) lose(b *ledgerBlock, cause error) {
	l := &p.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.closed.Load() || !containsBlock(l.blocks, b) {
		return
	}
	for _, ep := range append(l.retired, p.ep.Load()) {
		ep.err = cause
		close(ep.lost)
		ep.local.Break(&waitEnd{cause: cause})
	}
	for _, b := range l.blocks {
		close(b.gone)
		l.released = append(l.released, b.units)
	}
	l.blocks, l.retired = nil, nil
	p.ep.Store(newEpoch(l.capacity))
	p.signal()
}

func containsBlock(bs []*ledgerBlock, b *ledgerBlock) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// refused ends the waits of ep's callers, if ep is current, with err: etcd
// refused the block they waited for, for good, and would refuse it again.
// They fail with etcd's error, as plain mode's Acquire does, rather than wait
// for as long as their contexts let them while the manager asks again and
// again. The next epoch starts at once, with the blocks' free units.
func (p *blockPool) refused(ep *epoch, err error) {
	l := &p.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.closed.Load() || p.ep.Load() != ep || !ep.grants() {
		return
	}
	ep.local.Break(&waitEnd{refused: err})
	p.nextEpochLocked()
}

// shutdown ends the pool when the handle closes: waiters fail with
// ErrClosed, holders keep their units until Close revokes the lease (which
// gives them back; Lost does not close), and every later call fails with
// ErrClosed. It runs on the manager, once Close has ended the session's
// context.
func (p *blockPool) shutdown() {
	l := &p.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	p.closed.Store(true)
	p.ep.Load().local.Break(&waitEnd{cause: ErrClosed})
}

// errWaited is the error of a caller whose wait on the core failed with err:
// the pool ended it (the core broken with the reason), a shrink left n above
// the capacity, or its context ended.
func (p *blockPool) errWaited(ctx context.Context, c blockCall, start time.Time, err error) error {
	var end *waitEnd
	if errors.As(err, &end) {
		return p.errEnded(c, end)
	}
	if o, _ := semaphore.OutcomeOf(err); o == semaphore.TooLarge {
		return p.errEnded(c, &waitEnd{shrunk: true, capacity: p.seen.Load().capacity})
	}
	return p.errWait(ctx, c, start)
}
