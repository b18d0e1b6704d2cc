package etcdsem

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"
)

// The manager: one goroutine per block-mode handle that makes the handle's
// blocks follow its callers' demand and the fleet's. It looks whenever the
// mirror moves (a block granted or given back anywhere, a Resize, a Break), a
// caller may start waiting, a caller releases units while the fleet is
// contended, and once per blockIdle. Each look (step) decides from one
// reading of the mirror and one of the ledger:
//
//   - Demand is the units the handle's callers hold plus those they wait for;
//     another handle's is the units it holds plus those its keys wait for.
//     The handle's target is its max-min fair share of the capacity
//     (fairShare): its whole demand when the fleet's demands fit. When it
//     asks, a whole block counts as demand.
//   - Ask: while callers wait, the handle holds less than its target (or less
//     than the largest waiting request) and no block request is out, it asks
//     for one block (an acquire of the handle, one key in the fleet's FIFO
//     queue): enough for what its callers wait for, at least the block size,
//     at most what its target leaves room for, and never less than the
//     largest waiting request can use. It cancels the request when nobody
//     waits any longer, asks again when the request's key is not in the
//     queue a TTL after it was asked, and when a request larger than its
//     callers need has headed the queue for blockIdle (it was asked from a
//     view that has since moved), or at once when it heads the queue, does
//     not fit and is larger than the fair share the view now leaves it.
//   - Give back: when another handle waits in etcd or the fleet holds more
//     than the capacity (a shrinking Resize), the handle takes back its free
//     units at once, and what its callers may use above its target as they
//     release it, ahead of its own waiting callers (the core's Consume: it
//     revokes nobody). When another handle's key has headed the etcd queue
//     for blockIdle, the target is 0: every handle drains to it, so no
//     request in the fleet starves behind local grants, whatever its size.
//     With the fleet quiet, units found free at two idle checks in a row go
//     back, and units taken but not yet released are given back to the
//     callers. While the semaphore is broken its epoch grants nobody, so
//     every unit its callers release goes back.
//   - Units are taken from the callers before the key's weight drops in etcd
//     (the ledger's floor), so the handle never grants more than its keys
//     weigh.
//   - Report: after each look it writes the handle's report if due
//     (publish, report.go).
type blockManager struct {
	p *blockPool

	pending   *blockRequest // the block asked of etcd now; nil if none
	free      int64         // units free at the last idle check; -1 before the first
	head      string        // the key of another handle heading the etcd queue at the last look
	headSince time.Time     // since when it has
	report    reportState   // the handle's report as last written (report.go)
	rpc       attempts      // bounds the manager's RPCs, each retried at a later step until answered
}

func newBlockManager(p *blockPool) *blockManager {
	return &blockManager{p: p, free: -1, rpc: attempts{s: p.h.sess}}
}

// blockIdle is how long units sit free before a handle gives them back when
// nobody else waits: units found free at two checks blockIdle apart go back.
const blockIdle = time.Second

// A blockRequest is one block asked of etcd: an acquire of the handle on a
// goroutine of its own, which adds the block it is granted to the ledger
// itself, so that the callers waiting for it are fed without a hop through
// the manager.
type blockRequest struct {
	ep     *epoch    // the epoch whose callers it is for
	n      int64     // units asked
	at     time.Time // when asked
	cancel context.CancelFunc
	done   chan struct{} // closed when the request has ended
}

// run is the manager's loop.
func (m *blockManager) run() {
	p := m.p
	ctx := p.h.sess.ctx
	// The lease every block will need, now: the first block then costs one
	// round trip. A failure is retried by the first block request.
	_, _ = p.h.sess.leaseFor(ctx)
	tick := time.NewTicker(blockIdle)
	defer tick.Stop()
	var retry <-chan time.Time
	advanced := p.h.advanced()
	for {
		var ended chan struct{}
		if m.pending != nil {
			ended = m.pending.done
		}
		idle := false
		select {
		case <-ctx.Done():
			p.shutdown()
			return
		case <-p.wake:
		case <-advanced:
		case <-retry:
			retry = nil
		case <-ended:
			m.requestEnded()
		case <-tick.C:
			idle = true
		}
		// Taken before the step reads the mirror: a move while it looks (its
		// round trips to etcd) wakes the next wait instead of the idle tick.
		advanced = p.h.advanced()
		if !m.step(idle) && retry == nil {
			retry = time.After(retryPause)
		}
	}
}

// advanced returns the channel closed when the mirror next moves.
func (h *handle) advanced() chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.q.advanced
}

// step looks once and acts (see above). It reports false if an RPC failed and
// should be retried.
func (m *blockManager) step(idle bool) bool {
	p := m.p
	v := p.h.fleetView()
	p.apply(v)
	contended := v.broken || v.othersWaiting || v.held > v.capacity
	p.contended.Store(contended)
	drain := false // another handle has headed the etcd queue for blockIdle
	switch {
	case v.otherHead == "":
		m.head = ""
	case v.otherHead != m.head:
		m.head, m.headSince = v.otherHead, time.Now()
	default:
		drain = time.Since(m.headSince) >= blockIdle
	}

	_, waiting, maxN := p.waiting.read()
	l := &p.ledger
	l.mu.Lock()
	ep := p.ep.Load()
	u := p.usageLocked()
	free := u.free()
	target := fairShare(v.capacity, addSat(u.retired+u.held, waiting), v.others)
	if drain {
		target = 0 // no request in the fleet starves behind local grants
	}
	// Give back: free units at once, and the units callers may use above the
	// target as they release them, both ahead of the callers waiting; or,
	// with nobody else waiting, the units found free at two idle checks.
	switch usable := u.retired + u.usable; {
	case contended && u.debt() == 0:
		p.takeLocked(max(free, usable-target))
	case contended:
		p.untakeLocked(target - usable) // taken beyond what the target now asks
	default:
		p.untakeLocked(u.debt())
		if idle && waiting == 0 && m.free > 0 {
			p.takeLocked(min(m.free, free))
		}
	}
	if idle {
		m.free = free
	}
	u = p.usageLocked()
	free, held := u.free(), u.floor()
	changes := p.settleLocked()
	released := l.released
	l.released = nil
	l.mu.Unlock()

	m.ask(ep, v, waiting, maxN, free, held)
	ok := m.settle(changes)
	for _, b := range released {
		ctx, cancel := m.rpc.context(p.h.sess.ctx)
		err := b.Release(ctx)
		m.rpc.ended(ctx, err)
		cancel()
		if err != nil && !errors.Is(err, ErrLost) {
			l.mu.Lock()
			l.released = append(l.released, b)
			l.mu.Unlock()
			ok = false
		}
	}
	m.publish(idle)
	return ok
}

// ask cancels the block request out if it is no longer wanted, and sends one
// if callers wait (see above). The epoch's callers wait for waiting units,
// maxN at most each; free of its units are free, and the blocks must keep
// held.
func (m *blockManager) ask(ep *epoch, v fleetView, waiting, maxN, free, held int64) {
	p := m.p
	if m.pending != nil && (waiting <= free || v.broken || m.pending.ep != ep) {
		m.pending.cancel()
	}
	if m.pending != nil && v.mineHead && m.pending.n > max(maxN-free, 1) && time.Since(m.pending.at) >= blockIdle {
		// It heads the queue, larger than its callers need: it was asked
		// from a view that has moved (another handle's blocks not seen yet,
		// a fair share since shrunk) and may wait for units that will not
		// come, holding back every key behind it. Ask again, for what the
		// view shows now.
		m.pending.cancel()
	}
	if m.pending != nil && !v.mineWaiting && time.Since(m.pending.at) > p.h.sess.ttl {
		// Its key is not in the queue a TTL after it was asked: the request
		// is stuck outside it (its lease was lost, etcd does not answer).
		// Ask again: it had no place to keep.
		m.pending.cancel()
	}
	// A block is demand too: asking counts a whole block as wanted, within
	// the fair share.
	want := max(p.size, waiting-free)
	room := fairShare(v.capacity, addSat(held, want), v.others) - held
	if m.pending != nil && v.mineHead && addSat(v.held, m.pending.n) > v.capacity && m.pending.n > max(room, maxN-free) {
		// It heads the queue and does not fit, larger than the fair share
		// the view leaves it and than its largest waiting request needs: it
		// was asked before the view showed the other handles' demand (they
		// started together). Waiting leaves the free units idle and the
		// keys behind it waiting: ask again, for the share.
		m.pending.cancel()
	}
	// Callers wait for units only while they do not fit in the free ones; a
	// caller granted a moment ago may not have stopped counting yet.
	if m.pending != nil || waiting <= free || v.broken || room <= 0 && maxN <= held {
		return
	}
	n := min(max(min(want, room), maxN-free), v.capacity)
	if n <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(p.h.sess.ctx)
	req := &blockRequest{ep: ep, n: n, at: time.Now(), cancel: cancel, done: make(chan struct{})}
	if !p.h.sess.spawn(func() {
		defer close(req.done)
		u, err := p.h.acquire(ctx, n)
		switch {
		case err == nil:
			p.addBlock(u)
		case classify(err) == rpcRefused:
			p.refused(ep, err)
		}
	}) {
		cancel() // closing
		return
	}
	m.pending = req
	p.ledger.mu.Lock()
	p.ledger.requested = n
	p.ledger.mu.Unlock()
}

// requestEnded forgets the block request, which has ended: granted (its
// block added), refused (its callers failed) or cancelled.
func (m *blockManager) requestEnded() {
	m.pending.cancel()
	m.pending = nil
	m.p.ledger.mu.Lock()
	m.p.ledger.requested = 0
	m.p.ledger.mu.Unlock()
}

// A settleChange is a block whose key is to weigh to units instead of from.
type settleChange struct {
	b        *ledgerBlock
	from, to int64
}

// settle tells etcd the blocks' new weights: a lower weight in place, or the
// key deleted at 0, every key's write at once, so that units given back from
// several blocks reach a waiting handle after one round trip, not one per
// block. It reports false if an RPC failed (the next step retries); a block
// found lost ends the epochs through watchBlock.
func (m *blockManager) settle(changes []settleChange) bool {
	if len(changes) == 0 {
		return true
	}
	p := m.p
	ctx, cancel := m.rpc.context(p.h.sess.ctx)
	defer cancel()
	errs := make([]error, len(changes))
	var wg sync.WaitGroup
	for i, c := range changes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.to == 0 {
				errs[i] = c.b.units.Release(ctx)
			} else {
				errs[i] = c.b.units.Return(ctx, c.from-c.to)
			}
		}()
	}
	wg.Wait()
	ok := true
	var failed error
	for i, c := range changes {
		if err := errs[i]; err != nil {
			failed = cmp.Or(failed, err)
			ok = ok && errors.Is(err, ErrLost)
			continue
		}
		p.ledger.mu.Lock()
		p.settledLocked(c.b, c.to)
		p.ledger.mu.Unlock()
	}
	m.rpc.ended(ctx, failed)
	return ok
}
