package etcdsem

import (
	"context"
	"errors"
	"slices"
	"time"
)

// The manager: one goroutine per block-mode handle that makes the handle's
// blocks follow its callers' demand and the fleet's. It looks whenever the
// mirror moves (a block granted or given back anywhere, a Resize, a Break), a
// caller starts waiting, a caller releases units while the fleet is contended,
// and once per blockIdle. Each look (step) decides from one reading of the
// mirror and one of the pool:
//
//   - Demand is the units the handle's callers hold plus those they wait for;
//     another handle's is the units it holds plus those its keys wait for.
//     The handle's target is its max-min fair share of the capacity
//     (fairShare): its whole demand when the fleet's demands fit. When it
//     asks, a whole block counts as demand.
//   - Ask: while callers wait, the handle holds less than its target (or less
//     than the largest waiting request) and no block request is out, it asks
//     for one block (an acquire of one key, in the fleet's FIFO queue): enough
//     for what its callers wait for, at least the block size, at most what
//     its target leaves room for, and never less than the head can use. It
//     cancels the request when nobody waits any longer, asks again when the
//     request's key is not in the queue a TTL after it was asked, and when a
//     request larger than its callers need has headed the queue for
//     blockIdle (it was asked from a view that has since moved), or at once
//     when it heads the queue, does not fit and is larger than the fair
//     share the view now leaves it.
//   - Give back: when another handle waits in etcd, the fleet holds more than
//     the capacity (a shrinking Resize) or the semaphore is broken, the handle
//     gives back its free units at once (ahead of its own waiting callers: the
//     head of its queue does not fit in them, and they hold nothing), and
//     what it holds above its target as its callers release it (the manager
//     takes the head of its queue: it revokes nobody). When
//     another handle's key has headed the etcd queue for blockIdle, the
//     target is 0: every handle drains to it, so no request in the fleet
//     starves behind local grants, whatever its size. With the fleet quiet,
//     units found free at two idle checks in a row go back.
//   - Units leave the callers' pool before the key's weight drops in etcd
//     (ledger), so the handle never grants more than its keys weigh.
//   - Report: after each look it writes the handle's report if due
//     (publish, report.go).
type blockRequest struct {
	ep     *epoch
	n      int64     // units asked
	at     time.Time // when asked
	cancel context.CancelFunc
	done   chan blockResult // capacity 1: the goroutine never blocks
}

type blockResult struct {
	u   *Units
	err error
}

// blockRequestKey marks the context of a block request: Acquire and
// TryAcquire of a block-mode handle take a key of their own for it.
type blockRequestKey struct{}

func blockRequestContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, blockRequestKey{}, true)
}

func isBlockRequest(ctx context.Context) bool { return ctx.Value(blockRequestKey{}) != nil }

// fleetView is what a step reads of the mirror.
type fleetView struct {
	rev           int64 // the revision it shows
	capacity      int64
	broken        bool
	reason        string
	held          int64   // units granted to every handle (unknown keys count)
	othersWaiting bool    // another handle has a waiting key
	mineWaiting   bool    // this handle has a waiting key on its current lease
	otherHead     string  // the first waiting key, if another handle's
	mineHead      bool    // the first waiting key is this handle's
	others        []int64 // each other handle's demand: units held and waited for
}

// fleetView reads the mirror: the fleet as this handle sees it now.
func (s *Semaphore) fleetView() fleetView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := fleetView{rev: s.q.rev, capacity: s.q.capacity, broken: s.q.broken, reason: s.q.reason}
	mine := int64(-1)
	if s.lease != nil {
		mine = int64(s.lease.id)
	}
	demand := make(map[int64]int64)
	for _, k := range s.q.keys {
		if k.state == keyDead {
			continue
		}
		if k.state != keyWaiting {
			v.held = addSat(v.held, k.n)
		}
		if k.state == keyWaiting && !v.mineWaiting && !v.othersWaiting {
			if k.lease == mine {
				v.mineHead = true
			} else {
				v.otherHead = k.key
			}
		}
		if k.lease == mine {
			v.mineWaiting = v.mineWaiting || k.state == keyWaiting
			continue
		}
		if k.state == keyWaiting {
			v.othersWaiting = true
		}
		demand[k.lease] = addSat(demand[k.lease], k.n)
	}
	for _, d := range demand {
		v.others = append(v.others, d)
	}
	return v
}

// seen is what the callers' path reads of the mirror, at one revision.
type seen struct {
	rev      int64
	capacity int64
	broken   *string // the reason while broken; nil if not
}

// observe publishes what the callers' path reads of the mirror, unless a
// later revision's view is published already: a caller's view, read before
// the manager's, may reach here after it, and must not undo a Break.
func (p *blockPool) observe(v fleetView) {
	n := &seen{rev: v.rev, capacity: v.capacity}
	if v.broken {
		reason := v.reason
		n.broken = &reason
	}
	for {
		old := p.seen.Load()
		if old != nil && old.rev > n.rev || p.seen.CompareAndSwap(old, n) {
			return
		}
	}
}

// run is the manager's loop.
func (p *blockPool) run() {
	defer p.s.wg.Done()
	// The lease every block will need, now: the first block then costs one
	// round trip. A failure is retried by the first block request.
	_, _ = p.s.currentLease(p.s.bgCtx)
	tick := time.NewTicker(blockIdle)
	defer tick.Stop()
	var retry <-chan time.Time
	advanced := p.advanced()
	for {
		var granted chan blockResult
		if p.pending != nil {
			granted = p.pending.done
		}
		idle := false
		select {
		case <-p.s.bgCtx.Done():
			p.shutdown()
			return
		case <-p.wake:
		case <-advanced:
		case <-retry:
			retry = nil
		case res := <-granted:
			p.blockGranted(res)
		case <-tick.C:
			idle = true
		}
		// Taken before the step reads the mirror: a move while it looks (its
		// round trips to etcd) wakes the next wait instead of the idle tick.
		advanced = p.advanced()
		if !p.step(idle) && retry == nil {
			retry = time.After(retryPause)
		}
	}
}

// advanced returns the channel closed when the mirror next moves.
func (p *blockPool) advanced() chan struct{} {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return p.s.q.advanced
}

// step looks once and acts (see above). It reports false if an RPC failed and
// should be retried.
func (p *blockPool) step(idle bool) bool {
	v := p.s.fleetView()
	p.observe(v)
	contended := v.broken || v.othersWaiting || v.held > v.capacity
	p.contended.Store(contended)
	drain := false // another handle has headed the etcd queue for blockIdle
	switch {
	case v.otherHead == "":
		p.head = ""
	case v.otherHead != p.head:
		p.head, p.headSince = v.otherHead, time.Now()
	default:
		drain = time.Since(p.headSince) >= blockIdle
	}

	p.mu.Lock()
	ep := p.ep.Load()
	p.failLocked(ep, func(w *localWaiter) *waitEnd {
		switch {
		case w.reclaim:
			return nil
		case v.broken:
			return &waitEnd{broken: true, reason: v.reason}
		case w.n > v.capacity:
			return &waitEnd{shrunk: true, capacity: v.capacity}
		}
		return nil
	})
	var maxN int64
	for _, w := range p.queue {
		if !w.reclaim {
			maxN = max(maxN, w.n)
		}
	}
	waiting := p.waitUnits
	held := p.ledger.local()
	free := ep.local.Available()
	target := fairShare(v.capacity, addSat(held-free, waiting), v.others)
	if drain {
		target = 0 // no request in the fleet starves behind local grants
	}

	// Give back: free units at once, ahead of the callers waiting (the head
	// does not fit in them), and units above the target as callers release
	// them, ahead of the callers waiting.
	var giveFree, over int64
	switch {
	case v.broken:
		giveFree = free
	case contended:
		giveFree, over = free, held-target
	case idle && waiting == 0 && p.free > 0:
		giveFree = min(p.free, free)
	}
	if idle {
		p.free = free
	}
	if p.takeFreeLocked(ep, giveFree) {
		held, free, over = held-giveFree, free-giveFree, over-giveFree
	}
	switch {
	case over > 0 && !v.broken && p.reclaimer == nil:
		p.reclaimer = &localWaiter{n: over, reclaim: true, ready: make(chan struct{})}
		p.enqueueLocked(p.reclaimer)
		p.serveLocked(ep)
	case over <= 0 && p.reclaimer != nil:
		p.dequeueLocked(p.reclaimer)
		p.serveLocked(ep) // the callers it held back may fit now
	}
	released := p.released
	p.released = nil
	p.mu.Unlock()

	// Ask.
	if p.pending != nil && (waiting <= free || v.broken || p.pending.ep != ep) {
		p.pending.cancel()
	}
	if p.pending != nil && v.mineHead && p.pending.n > max(maxN-free, 1) && time.Since(p.pending.at) >= blockIdle {
		// It heads the queue, larger than its callers need: it was asked
		// from a view that has moved (another handle's blocks not seen yet,
		// a fair share since shrunk) and may wait for units that will not
		// come, holding back every key behind it. Ask again, for what the
		// view shows now.
		p.pending.cancel()
	}
	if p.pending != nil && !v.mineWaiting && time.Since(p.pending.at) > p.s.cfg.ttl {
		// Its key is not in the queue a TTL after it was asked: the request
		// is stuck outside it (its lease was lost, etcd does not answer).
		// Ask again: it had no place to keep.
		p.pending.cancel()
	}
	// A block is demand too: asking counts a whole block as wanted, within
	// the fair share.
	want := max(p.size, waiting-free)
	room := fairShare(v.capacity, addSat(held, want), v.others) - held
	if p.pending != nil && v.mineHead && addSat(v.held, p.pending.n) > v.capacity && p.pending.n > max(room, maxN-free) {
		// It heads the queue and does not fit, larger than the fair share
		// the view leaves it and than its callers' head needs: it was asked
		// before the view showed the other handles' demand (they started
		// together). Waiting leaves the free units idle and the keys behind
		// it waiting: ask again, for the share.
		p.pending.cancel()
	}
	// Callers wait for units only while they do not fit in the free ones; a
	// caller granted a moment ago may not have left the waiters yet.
	if p.pending == nil && waiting > free && !v.broken && (room > 0 || maxN > held) {
		ask := min(want, room)
		ask = min(max(ask, maxN-free), v.capacity)
		if ask > 0 {
			p.ask(ep, ask)
		}
	}

	ok := p.settle()
	for _, u := range released {
		ctx, cancel := context.WithTimeout(p.s.bgCtx, p.s.attemptTimeout())
		err := u.Release(ctx)
		cancel()
		if err != nil && !errors.Is(err, ErrLost) {
			p.mu.Lock()
			p.released = append(p.released, u)
			p.mu.Unlock()
			ok = false
		}
	}
	p.publish(idle)
	return ok
}

// takeFreeLocked takes k free units of ep out of local use, if they are
// free, ahead of the callers waiting. p.mu is held.
func (p *blockPool) takeFreeLocked(ep *epoch, k int64) bool {
	if k <= 0 || p.ep.Load() != ep || !ep.local.TryAcquire(k) {
		return false
	}
	p.ledger.take(k)
	return true
}

// ask sends one block request for n units on its own goroutine.
func (p *blockPool) ask(ep *epoch, n int64) {
	ctx, cancel := context.WithCancel(blockRequestContext(p.s.bgCtx))
	req := &blockRequest{ep: ep, n: n, at: time.Now(), cancel: cancel, done: make(chan blockResult, 1)}
	p.pending = req
	p.mu.Lock()
	p.requested = n
	p.mu.Unlock()
	p.s.wg.Add(1)
	go func() {
		defer p.s.wg.Done()
		u, err := p.s.Acquire(ctx, n)
		req.done <- blockResult{u: u, err: err}
	}()
}

// blockGranted takes the answer to the block request.
func (p *blockPool) blockGranted(res blockResult) {
	req := p.pending
	p.pending = nil
	req.cancel()
	p.mu.Lock()
	p.requested = 0
	p.mu.Unlock()
	switch {
	case res.err == nil:
		p.addBlock(req.ep, res.u)
	case classify(res.err) == rpcRefused:
		// etcd would refuse the same request again: the callers waiting for
		// it fail with etcd's error, as plain mode's Acquire does, rather
		// than wait for as long as their contexts let them while the
		// manager asks again and again.
		p.mu.Lock()
		if p.ep.Load() == req.ep {
			p.failLocked(req.ep, func(w *localWaiter) *waitEnd {
				if w.reclaim {
					return nil
				}
				return &waitEnd{refused: res.err}
			})
		}
		p.mu.Unlock()
	}
}

// settle tells etcd the blocks' new weights: a lower weight in place, or the
// key deleted at 0. It reports false if an RPC failed (the next step retries);
// a block found lost ends its epoch through watchBlock.
func (p *blockPool) settle() bool {
	type change struct {
		b             *ledgerBlock
		local, remote int64
	}
	p.mu.Lock()
	var cs []change
	for _, b := range p.ledger.unsettled() {
		cs = append(cs, change{b, b.local, b.remote})
	}
	p.mu.Unlock()
	ok := true
	for _, c := range cs {
		ctx, cancel := context.WithTimeout(p.s.bgCtx, p.s.attemptTimeout())
		var err error
		if c.local == 0 {
			err = c.b.units.Release(ctx)
		} else {
			err = c.b.units.Return(ctx, c.remote-c.local)
		}
		cancel()
		if err != nil {
			ok = ok && errors.Is(err, ErrLost)
			continue
		}
		p.mu.Lock()
		if slices.Contains(p.ledger.blocks, c.b) {
			p.ledger.settled(c.b, c.local)
			if c.b.remote == 0 {
				close(c.b.gone)
			}
		}
		p.mu.Unlock()
	}
	return ok
}
