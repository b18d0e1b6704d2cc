package etcdsem

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fairsem/semaphore"
)

// The ledger: a block-mode handle's blocks, its epochs, and how many of the
// blocks' units its callers may use, changed only under its lock, by the
// manager and by a TryAcquire that took a block.
//
// The bound rests on one inequality, kept by the order of every operation
// below: the blocks' weights in etcd are at least the units the handle's
// callers hold, now and after every later grant. The current epoch's core
// semaphore grants the callers; its capacity is the semaphore's, K, of which
// the pool holds a reserve R, so it grants only while its callers hold at most
// K-R, and from now on they hold at most max(H, K-R), H being what they hold
// now (a broken core grants nobody: H). Earlier epochs grant nobody: their
// callers hold at most what they hold now. That sum is the floor,
//
//	floor = Σ H of earlier epochs + max(H, K-R),
//
// and every block's kept weight (its key's weight once the writes in flight
// land) adds up to at least the floor:
//
//   - add: a block etcd granted is kept whole; its units are fed to the core
//     after it, never more than the surplus (kept weights less the floor).
//   - feed: lowers R by at most the surplus, which raises the floor by at
//     most that much.
//   - take: raises R (the core's Consume: ahead of the callers waiting,
//     revoking nobody), which only lowers the floor, as callers release.
//   - untake: lowers R by at most the debt (H above K-R), which leaves the
//     floor at H.
//   - resize: sets K, moving R with it so that K-R never grows.
//   - settle: lowers the kept weights to the floor, newest blocks first, and
//     the manager writes them; etcd's weights only drop, to the kept ones.
//
// The rule keeps the blocks' weights within the capacity at every revision,
// so the callers of every handle hold at most the capacity.
type ledger struct {
	mu        sync.Mutex
	blocks    []*ledgerBlock // guarded by mu: in the order granted
	retired   []*epoch       // guarded by mu: earlier epochs whose callers may still hold units
	rev       int64          // guarded by mu: the revision of the view applied last
	capacity  int64          // guarded by mu: K, the capacity applied to the current epoch
	released  []*Units       // guarded by mu: blocks to give back whole (the others of a lost one, or granted while closing)
	requested int64          // guarded by mu: units of the block asked of etcd now; 0 if none
}

// A ledgerBlock is one block: an acquire of the handle, granted.
type ledgerBlock struct {
	units  *Units        // the block, as the handle granted it
	token  int64         // its key's create revision
	kept   int64         // the weight its key keeps once the writes in flight land; <= remote
	remote int64         // its key's weight as etcd last confirmed it
	gone   chan struct{} // closed when the pool stops watching the block
}

// An epoch is the life of one core semaphore granting the callers. It ends
// when a block of the handle is lost (its holders are told) or the handle
// closes; it is retired, granting nobody more while its holders keep their
// units, when the semaphore is broken (until a Repair starts the next one) or
// etcd refuses a block request for good (the next one starts at once).
type epoch struct {
	local   *semaphore.Semaphore // grants the callers; broken once the epoch grants nobody more
	reserve int64                // units of local the pool holds, not the callers'; guarded by ledger.mu
	lost    chan struct{}        // closed when a block of the handle is lost while callers may hold this epoch's units
	err     error                // why the units were lost: written before lost closes
	inUse   atomic.Int64         // units held by callers
	holds   atomic.Int64         // callers holding
}

// newEpoch returns an epoch whose core has capacity k, all of it in the
// pool's reserve until blocks are fed to it.
func newEpoch(k int64) *epoch {
	k = min(k, semaphore.MaxUnits)
	e := &epoch{local: semaphore.New(k), reserve: k, lost: make(chan struct{})}
	e.local.Consume(k)
	return e
}

// heldLocked returns the units e's callers hold: the core's units held, less
// the pool's. ledger.mu is held (it guards the reserve).
func (e *epoch) heldLocked() int64 { return e.local.Stats().Held - e.reserve }

// grants reports whether e may still grant.
func (e *epoch) grants() bool { return e.local.Err() == nil }

// usage is what the ledger's floor is made of, read together under its lock.
type usage struct {
	retired int64 // units the callers of earlier epochs hold
	held    int64 // units the callers of the current epoch hold (H)
	usable  int64 // units the current epoch may let them hold (K-R); H if it grants nobody
	kept    int64 // the blocks' kept weights
}

// floor is the least the blocks must keep weighing.
func (u usage) floor() int64 { return u.retired + max(u.held, u.usable) }

// free is the units the current epoch could grant now.
func (u usage) free() int64 { return max(u.usable-u.held, 0) }

// debt is the units taken back (or cut by a shrink) that the current epoch's
// callers still hold.
func (u usage) debt() int64 { return max(u.held-u.usable, 0) }

// usageLocked reads the ledger's usage, forgetting retired epochs whose
// callers are all gone: a caller holding zero units still holds its Units,
// whose Lost a loss must close. ledger.mu is held.
func (p *blockPool) usageLocked() usage {
	l := &p.ledger
	var u usage
	l.retired = slices.DeleteFunc(l.retired, func(e *epoch) bool {
		h := e.heldLocked()
		u.retired += h
		return h == 0 && e.holds.Load() == 0
	})
	ep := p.ep.Load()
	u.held = ep.heldLocked()
	u.usable = u.held
	if ep.grants() {
		u.usable = ep.local.Capacity() - ep.reserve
	}
	for _, b := range l.blocks {
		u.kept += b.kept
	}
	return u
}

// addLocked records the block u granted in etcd, kept whole, and feeds its
// units to the current epoch; it reports false, recording nothing, if the
// handle is closing or u was lost already (the caller gives it back). The
// token is published before the units: see grant. ledger.mu is held.
func (p *blockPool) addLocked(u *Units) (*ledgerBlock, bool) {
	n := u.Count()
	if p.closed.Load() || n == 0 || u.Err() != nil {
		return nil, false
	}
	b := &ledgerBlock{units: u, token: u.Token(), kept: n, remote: n, gone: make(chan struct{})}
	p.ledger.blocks = append(p.ledger.blocks, b)
	if b.token > p.token.Load() {
		p.token.Store(b.token)
	}
	p.feedLocked(n)
	return b, true
}

// feedLocked lets the current epoch's callers use up to n more units of the
// blocks, no more than the surplus. ledger.mu is held.
func (p *blockPool) feedLocked(n int64) {
	ep := p.ep.Load()
	if !ep.grants() {
		return
	}
	u := p.usageLocked()
	if x := min(n, ep.reserve, u.kept-u.floor()); x > 0 {
		ep.reserve -= x
		ep.local.Release(x) // grants the callers waiting that now fit, in order
	}
}

// takeLocked takes k units of the current epoch back from its callers: the
// free ones at once, the rest as callers release them, ahead of the callers
// waiting. ledger.mu is held.
func (p *blockPool) takeLocked(k int64) {
	if ep := p.ep.Load(); k > 0 && ep.grants() {
		ep.local.Consume(k)
		ep.reserve += k
	}
}

// untakeLocked gives back to the callers up to k units taken that they
// still hold (the debt). ledger.mu is held.
func (p *blockPool) untakeLocked(k int64) {
	ep := p.ep.Load()
	if !ep.grants() {
		return
	}
	if x := min(k, p.usageLocked().debt(), ep.reserve); x > 0 {
		ep.reserve -= x
		ep.local.Release(x)
	}
}

// resizeLocked sets the current epoch's capacity to k, the semaphore's: the
// reserve moves with it, so that the units its callers may use do not grow.
// Its waiters asking for more than k fail (the core's ErrTooLarge).
// ledger.mu is held.
func (p *blockPool) resizeLocked(k int64) {
	k = min(k, semaphore.MaxUnits)
	p.ledger.capacity = k
	ep := p.ep.Load()
	old := ep.local.Capacity()
	if k == old || !ep.grants() {
		return
	}
	if k > old {
		ep.local.Consume(k - old) // held back before the core has room for them
		ep.reserve += k - old
		ep.local.Resize(k)
		return
	}
	ep.local.Resize(k)
	x := min(ep.reserve, old-k)
	ep.reserve -= x
	ep.local.Release(x)
}

// nextEpochLocked retires the current epoch, broken, and starts the next,
// fed the blocks' surplus. ledger.mu is held.
func (p *blockPool) nextEpochLocked() {
	p.ledger.retired = append(p.ledger.retired, p.ep.Load())
	p.ep.Store(newEpoch(p.ledger.capacity))
	p.feedLocked(semaphore.MaxUnits)
}

// settleLocked lowers the kept weights to the floor, newest block first, so
// that whole blocks empty and their keys can go, and returns the keys to
// write (kept below remote), oldest first. ledger.mu is held.
func (p *blockPool) settleLocked() []settleChange {
	bs := p.ledger.blocks
	u := p.usageLocked()
	for i, surplus := len(bs)-1, u.kept-u.floor(); i >= 0 && surplus > 0; i-- {
		t := min(surplus, bs[i].kept)
		bs[i].kept -= t
		surplus -= t
	}
	var out []settleChange
	for _, b := range bs {
		if b.kept < b.remote {
			out = append(out, settleChange{b: b, from: b.remote, to: b.kept})
		}
	}
	return out
}

// settledLocked records that b's key now weighs w units (deleted at 0): the
// weight written, which kept may have dropped below since. ledger.mu is held.
func (p *blockPool) settledLocked(b *ledgerBlock, w int64) {
	l := &p.ledger
	i := slices.Index(l.blocks, b)
	if i < 0 {
		return // lost meanwhile
	}
	b.remote = w
	if w == 0 {
		l.blocks = slices.Delete(l.blocks, i, i+1)
		close(b.gone)
	}
}
