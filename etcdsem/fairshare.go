package etcdsem

import "slices"

// fairShare returns the units a handle whose demand is self should hold when
// the handles whose demands are others share capacity max-min fairly: every
// handle gets its whole demand if the demands fit; otherwise there is a level
// L such that each handle gets min(demand, L) and those levels add up to the
// capacity (rounded down to whole units), and the handle's share is
// min(self, L). Demands are non-negative.
func fairShare(capacity, self int64, others []int64) int64 {
	ds := append(slices.Clone(others), self)
	slices.Sort(ds)
	left := capacity
	for i, d := range ds {
		// The handles from i on all demand at least d: if each of them can
		// have d, the smallest is served whole and the level is higher.
		rest := int64(len(ds) - i)
		if d > left/rest {
			return min(self, left/rest)
		}
		left -= d
	}
	return self
}

// A ledger is a handle's record of its blocks: for each block, the units the
// handle lets its callers use (local) and the weight of the block's key in
// etcd (remote). The bound rests on one invariant, kept by the order of its
// operations: local <= remote for every block, so the units the handle grants
// never exceed the weights of its keys, which the rule keeps within the
// capacity.
//
//   - add records a block granted in etcd: remote first, then local.
//   - take moves k units out of local use, newest block first (so that whole
//     blocks empty and their keys can go); the caller has taken the units
//     from its callers' pool before, and tells etcd after (lower the weight,
//     or delete the key of a block at 0).
//   - settled records the weight etcd applied to a block's key.
//
// It is not safe for concurrent use; the block pool guards it with its mutex.
type ledger struct {
	blocks []*ledgerBlock // in the order granted
}

type ledgerBlock struct {
	units  *Units        // the block's acquisition in etcd
	token  int64         // the key's create revision
	local  int64         // units callers may use; <= remote
	remote int64         // the key's weight in etcd as last written
	gone   chan struct{} // closed when the pool stops watching the block
}

// add records a block of n units granted at token.
func (l *ledger) add(u *Units, token, n int64) *ledgerBlock {
	b := &ledgerBlock{units: u, token: token, local: n, remote: n}
	l.blocks = append(l.blocks, b)
	return b
}

// local returns the units of every block that callers may use.
func (l *ledger) local() int64 {
	var sum int64
	for _, b := range l.blocks {
		sum += b.local
	}
	return sum
}

// take moves k units (at most local()) out of local use, newest block first.
func (l *ledger) take(k int64) {
	for i := len(l.blocks) - 1; i >= 0 && k > 0; i-- {
		b := l.blocks[i]
		t := min(k, b.local)
		b.local -= t
		k -= t
	}
}

// unsettled returns the blocks whose key weighs more than their local units,
// oldest first: the ones etcd must be told about.
func (l *ledger) unsettled() []*ledgerBlock {
	var out []*ledgerBlock
	for _, b := range l.blocks {
		if b.local < b.remote {
			out = append(out, b)
		}
	}
	return out
}

// settled records that b's key now weighs w units (deleted at 0): the weight
// written, which b.local may have dropped below since (a take while the write
// was in flight), leaving b unsettled.
func (l *ledger) settled(b *ledgerBlock, w int64) {
	b.remote = w
	if b.remote == 0 {
		l.remove(b)
	}
}

// remove forgets b (its key is gone).
func (l *ledger) remove(b *ledgerBlock) {
	if i := slices.Index(l.blocks, b); i >= 0 {
		l.blocks = slices.Delete(l.blocks, i, i+1)
	}
}
