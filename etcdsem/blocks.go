package etcdsem

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairsem/semaphore"
	clientv3 "go.etcd.io/etcd/client/v3"
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

// blockIdle is how long units sit free before a handle gives them back when
// nobody else waits: units found free at two checks blockIdle apart go back.
const blockIdle = time.Second

// A blockPool serves a block-mode handle's callers from its blocks. The
// callers' path touches only atomics and the epoch's core semaphore; a single
// manager goroutine (blockdemand.go) asks etcd for blocks and gives units
// back.
type blockPool struct {
	// fixed at creation
	s    *Semaphore
	size int64
	wake chan struct{} // capacity 1: something changed, the manager should look

	// atomic: read on the callers' path
	ep        atomic.Pointer[epoch] // the current epoch
	token     atomic.Int64          // the highest block token ever held: only grows
	seq       atomic.Int64          // numbers local grants, across epochs
	seen      atomic.Pointer[seen]  // the mirror as last observed: only ever replaced by a later revision's
	closed    atomic.Bool
	contended atomic.Bool   // others wait or the fleet is over capacity: releases wake the manager
	granted   atomic.Uint64 // local grants made, for the debug page

	mu        sync.Mutex
	ledger    ledger         // guarded by mu: the current epoch's blocks
	queue     []*localWaiter // guarded by mu: the current epoch's callers waiting, in arrival order
	waitUnits int64          // guarded by mu: the units callers in queue wait for
	nwait     atomic.Int64   // len(queue), written under mu: the callers' path reads it to queue behind
	reclaimer *localWaiter   // guarded by mu: the manager's place in queue, taking units back; nil if none
	released  []*Units       // guarded by mu: blocks of ended epochs, for the manager to give back
	requested int64          // guarded by mu: units of the block asked of etcd now; 0 if none

	// owned by the manager goroutine
	pending   *blockRequest
	free      int64     // units free at the last idle check; -1 before the first
	head      string    // the key of another handle heading the etcd queue at the last look
	headSince time.Time // since when it has

	// owned by the manager goroutine: the handle's report (report.go)
	reported     callers          // what the last report written says
	reportedOn   clientv3.LeaseID // the lease it was written under; 0 before the first
	reportedAt   time.Time        // when it was written
	reportFailed bool             // the last write failed: the next is tried at the idle tick
}

// An epoch is the life of a set of blocks: it ends when one is lost (every
// holder of it is told) or the handle closes. Its core semaphore counts the
// units: its capacity is semaphore.MaxUnits, of which the pool holds back
// every unit that no block covers (adding a block releases its units, taking
// units back acquires them), so Available is the blocks' units that no
// caller holds. Only TryAcquire is ever called on it: callers that must wait
// wait in the pool's queue, where the manager can take free units ahead of
// them (they hold nothing, so nobody is revoked).
type epoch struct {
	local *semaphore.Semaphore
	lost  chan struct{} // closed when a block of the epoch is lost
	err   error         // why the epoch ended; written before lost closes or local breaks
	inUse atomic.Int64  // units held by callers
	holds atomic.Int64  // callers holding
}

func newEpoch() *epoch {
	e := &epoch{local: semaphore.New(semaphore.MaxUnits), lost: make(chan struct{})}
	e.local.TryAcquire(semaphore.MaxUnits) // held back until blocks cover units
	return e
}

// A localWaiter is a caller (or the manager taking units back) waiting in the
// pool's queue. Guarded by blockPool.mu.
type localWaiter struct {
	n       int64
	reclaim bool          // the manager's: the units it is served go back to etcd
	ready   chan struct{} // closed when served or failed
	done    bool          // served or failed: out of the queue
	end     *waitEnd      // why it failed; nil when served
}

// newBlockPool starts the block pool of s, with the mirror as it is now.
func newBlockPool(s *Semaphore, size int64) *blockPool {
	p := &blockPool{
		s:    s,
		size: size,
		wake: make(chan struct{}, 1),
		free: -1,
	}
	p.ep.Store(newEpoch())
	p.observe(s.fleetView())
	// The pool's goroutines are the handle's: Close waits for them, once its
	// watch stopped (bgCtx), which ends them.
	s.wg.Add(1)
	go p.run()
	return p
}

// signal wakes the manager.
func (p *blockPool) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// acquire is Acquire in block mode: from the current epoch's units if they
// are free and no caller waits; otherwise the caller waits in the pool's
// FIFO queue and the manager asks etcd for a block.
func (p *blockPool) acquire(ctx context.Context, n int64) (*Units, error) {
	start := time.Now()
	c := blockCall{n: n}
	if ctx.Err() != nil {
		return nil, p.errWait(ctx, c, start)
	}
	if err := p.refuse(ctx, c, start); err != nil {
		return nil, err
	}
	ep := p.ep.Load()
	if p.nwait.Load() == 0 && ep.local.TryAcquire(n) {
		select {
		case <-ctx.Done():
			// Ended before the grant, or with it: the units pass on, as
			// in-process and below.
			p.giveBack(ep, n)
			return nil, p.errWait(ctx, c, start)
		default:
		}
		return p.grant(ep, n), nil
	}
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		return nil, p.errClosed(c)
	}
	ep = p.ep.Load() // a caller arriving after a loss waits in the new epoch
	w := &localWaiter{n: n, ready: make(chan struct{})}
	p.enqueueLocked(w)
	p.serveLocked(ep)
	p.mu.Unlock()
	p.signal()
	select {
	case <-w.ready:
	case <-ctx.Done():
	}
	p.mu.Lock()
	if !w.done {
		p.dequeueLocked(w)
		p.serveLocked(ep) // a head leaving may let the callers behind it in
		p.mu.Unlock()
		return nil, p.errWait(ctx, c, start)
	}
	p.mu.Unlock()
	switch {
	case w.end != nil:
		return nil, p.errEnded(c, w.end)
	case ctx.Err() != nil:
		// Decided on ctx whenever it has ended, even if a grant raced it:
		// the units pass on, as in-process.
		p.giveBack(ep, n)
		return nil, p.errWait(ctx, c, start)
	}
	return p.grant(ep, n), nil
}

// enqueueLocked appends w to the queue; the manager's reclaimer goes to its
// head instead: the next units callers release go back (taking nothing from
// a holder), and a reclaimer dropped and made again as the fleet's contention
// comes and goes never falls behind callers that keep arriving. p.mu is held.
func (p *blockPool) enqueueLocked(w *localWaiter) {
	if w.reclaim {
		p.queue = slices.Insert(p.queue, 0, w)
	} else {
		p.queue = append(p.queue, w)
	}
	p.nwait.Store(int64(len(p.queue)))
	if !w.reclaim {
		p.waitUnits += w.n
	}
}

// dequeueLocked takes w out of the queue. p.mu is held.
func (p *blockPool) dequeueLocked(w *localWaiter) {
	if i := slices.Index(p.queue, w); i >= 0 {
		p.queue = slices.Delete(p.queue, i, i+1)
	}
	p.nwait.Store(int64(len(p.queue)))
	if !w.reclaim {
		p.waitUnits -= w.n
	}
	if p.reclaimer == w {
		p.reclaimer = nil
	}
	w.done = true
}

// serveLocked serves the queue's head while its units are free in ep, in
// order: a head that does not fit holds back the callers behind it, so a
// large request is never starved. A reclaimer served takes its units out of
// local use. p.mu is held.
func (p *blockPool) serveLocked(ep *epoch) {
	for len(p.queue) > 0 && p.ep.Load() == ep {
		w := p.queue[0]
		if !ep.local.TryAcquire(w.n) {
			return
		}
		p.dequeueLocked(w)
		if w.reclaim {
			p.ledger.take(w.n)
			p.signal() // the manager tells etcd
		}
		close(w.ready)
	}
}

// failLocked fails the waiters for which fail says why, then serves the
// queue. p.mu is held.
func (p *blockPool) failLocked(ep *epoch, fail func(w *localWaiter) *waitEnd) {
	for _, w := range slices.Clone(p.queue) {
		if end := fail(w); end != nil {
			p.dequeueLocked(w)
			w.end = end
			close(w.ready)
		}
	}
	p.serveLocked(ep)
}

// giveBack returns n units a caller held (or was granted) to ep and serves
// the queue. The units reach the semaphore before the queue is looked at,
// and a caller that queues looks after it queued, so neither misses the
// other (see acquire).
func (p *blockPool) giveBack(ep *epoch, n int64) {
	ep.local.Release(n)
	if p.nwait.Load() > 0 {
		p.mu.Lock()
		p.serveLocked(ep)
		p.mu.Unlock()
	}
	if p.contended.Load() {
		p.signal() // another handle waits: the manager may give these back
	}
}

// refuse returns the error of a call for n units that cannot be served: the
// handle is closed, the semaphore broken, or n above the capacity. Broken and
// too large are decided on the mirror once it has caught up with etcd, so a
// Repair or a growing Resize just before the call counts.
func (p *blockPool) refuse(ctx context.Context, c blockCall, start time.Time) error {
	if p.closed.Load() {
		return p.errClosed(c)
	}
	if v := p.seen.Load(); v.broken == nil && c.n <= v.capacity {
		return nil
	}
	cctx, stop := p.s.callContext(ctx) // Close ends the read
	defer stop()
	if err := p.s.catchUp(cctx); err != nil {
		return p.errRPC(ctx, c, start, err)
	}
	v := p.s.fleetView()
	p.observe(v)
	switch {
	case v.broken:
		return p.errBroken(c, v.reason)
	case c.n > v.capacity:
		return p.errTooLarge(c, v.capacity)
	}
	return nil
}

// grant returns the Units of a local grant of n units in ep. The token is read
// after the grant: a block's token is published before its units are (see
// addBlock), so the token is at least that of every block whose units the
// grant could use.
func (p *blockPool) grant(ep *epoch, n int64) *Units {
	ep.inUse.Add(n)
	ep.holds.Add(1)
	p.granted.Add(1)
	h := &localHold{p: p, ep: ep, seq: p.seq.Add(1)}
	h.n.Store(n)
	return &Units{s: p.s, local: h, token: p.token.Load()}
}

// tryAcquire is TryAcquire in block mode: from the epoch's free units if no
// caller waits; with none free, it asks etcd for a block without queueing (a
// plain TryAcquire of max(n, block size) units, then of n).
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
	if p.nwait.Load() > 0 {
		return nil, false, nil // callers wait here: never jump them
	}
	if ep.local.TryAcquire(n) {
		return p.grant(ep, n), true, nil
	}
	asks := []int64{n}
	if a := min(max(n, p.size), p.seen.Load().capacity); a > n {
		asks = []int64{a, n}
	}
	for _, ask := range asks {
		u, ok, err := p.s.TryAcquire(blockRequestContext(ctx), ask)
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
			p.addBlock(ep, u)
			// Callers that came meanwhile were served from it first; one
			// that still waits keeps the rest.
			if p.nwait.Load() == 0 && ep.local.TryAcquire(n) {
				return p.grant(ep, n), true, nil
			}
			return nil, false, nil
		}
	}
	return nil, false, nil
}

// addBlock adds the block u to ep, if ep is still current and the handle open;
// otherwise it hands u to the manager to give back. The token is published
// before the units: see grant.
func (p *blockPool) addBlock(ep *epoch, u *Units) {
	n, tok := u.Count(), u.Token()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ep.Load() != ep || p.closed.Load() || n == 0 {
		p.released = append(p.released, u)
		p.signal()
		return
	}
	b := p.ledger.add(u, tok, n)
	b.gone = make(chan struct{})
	if tok > p.token.Load() {
		p.token.Store(tok)
	}
	ep.local.Release(n)
	p.serveLocked(ep)
	p.s.wg.Add(1) // under mu, before shutdown: the manager still counts
	go p.watchBlock(ep, b)
}

// watchBlock ends ep when b is lost. Lost closes for the block's Units before
// the lease can expire on the server (see lease), and ending the epoch closes
// every local holder's Lost at once after it, within the safety margin.
func (p *blockPool) watchBlock(ep *epoch, b *ledgerBlock) {
	defer p.s.wg.Done()
	select {
	case <-b.units.Lost():
		p.s.mu.Lock()
		cause := b.units.r.err
		p.s.mu.Unlock()
		p.lose(ep, blockLost(b.token, cause))
	case <-b.gone:
	case <-p.s.bgCtx.Done():
	}
}

// lose ends ep, if current, because a block of it was lost: every holder's
// Lost closes, every waiter fails with cause, and the epoch's other blocks
// are given back; a new epoch starts with no blocks.
func (p *blockPool) lose(ep *epoch, cause error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ep.Load() != ep || p.closed.Load() {
		return
	}
	ep.err = cause
	close(ep.lost)
	p.endLocked(ep, cause)
	for _, b := range p.ledger.blocks {
		close(b.gone)
		p.released = append(p.released, b.units)
	}
	p.ledger = ledger{}
	p.ep.Store(newEpoch())
	p.signal()
}

// endLocked fails every waiter with cause and breaks ep's semaphore, so that
// a caller holding ep from before cannot take its units. p.mu is held.
func (p *blockPool) endLocked(ep *epoch, cause error) {
	p.failLocked(ep, func(*localWaiter) *waitEnd { return &waitEnd{cause: cause} })
	ep.local.Break(cause)
}

// shutdown ends the pool when the handle closes: waiters fail with
// ErrClosed, holders keep their units until Close revokes the lease (which
// gives them back; Lost does not close), and every later call fails with
// ErrClosed. It runs on the manager, once Close has stopped the watch.
func (p *blockPool) shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed.Store(true)
	ep := p.ep.Load()
	ep.err = ErrClosed
	p.endLocked(ep, ErrClosed)
	if p.pending != nil {
		p.pending.cancel()
	}
}

// ledgerSnapshot returns a copy of the current epoch's blocks.
func (p *blockPool) ledgerSnapshot() []ledgerBlock {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ledgerBlock, len(p.ledger.blocks))
	for i, b := range p.ledger.blocks {
		out[i] = *b
	}
	return out
}
