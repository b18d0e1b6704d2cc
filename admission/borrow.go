package admission

import (
	"cmp"
	"slices"
)

// Borrowing from a group's shared pool.
//
// A member's memory limit is its share. What a member holds beyond its share is
// borrowed from the pool: borrowed(m) = max(0, used(m) - share(m)), computed, not
// recorded, so memory goes back to the pool the moment the borrower gives it back,
// by whatever path (Release, Return, ReleaseBase, eviction, a re-split that raises
// its share). The pool lends while the sum of what members borrow stays within it.
//
// A request that does not fit its member's remaining share (and is not let in by
// "always admit one") may borrow the rest, if the pool has it and no other
// member's queue head is ahead of it for the pool. Heads that claim the pool are
// ranked by how much their member borrows per share, least first, then by arrival:
// a member within its share borrows nothing, so its requests come before every
// borrower's; borrowers share the pool in proportion to their shares. A claimant
// that is ahead holds the pool for itself, even when a smaller request behind it
// would fit (as in a FIFO queue, so that a large request is not starved). Every
// piece of state this reads belongs to members of one group, all guarded by the
// group's one lock, which the caller holds.

// borrowedLocked is what c holds beyond its share.
func (c *Controller) borrowedLocked() int64 { return max(0, -c.avail.Memory) }

// lentLocked is what the members borrow now; it may exceed the pool after a
// re-split or Consume.
func (g *Group) lentLocked() int64 {
	var n int64
	for _, m := range g.members {
		n += m.borrowedLocked()
	}
	return n
}

// lendsLocked reports whether the pool lets c's request for memory, arrived at
// seq, in when c's availability is avail (now, or after evictions): the pool has
// what it lacks and no other member's head is ahead of it.
func (g *Group) lendsLocked(c *Controller, avail Resources, memory int64, seq uint64) bool {
	need := memory - max(0, avail.Memory)
	free := g.pool - g.lentLocked() + c.borrowedLocked() - max(0, -avail.Memory)
	return need <= free && !g.aheadLocked(c, seq)
}

// aheadLocked reports whether another member's queue head claims the pool before
// c's request arrived at seq.
func (g *Group) aheadLocked(c *Controller, seq uint64) bool {
	for _, m := range g.members {
		if m == c || m.queue.Len() == 0 {
			continue
		}
		w := m.queue.Front()
		if g.claimsLocked(m, w) && g.beforeLocked(m, w.seq, c, seq) {
			return true
		}
	}
	return false
}

// claimsLocked reports whether w, the head of m's queue, waits for the pool only:
// every other rule lets it in, and the pool could cover it once it has drained (a
// request the pool could never cover does not hold it for others).
func (g *Group) claimsLocked(m *Controller, w *waiter) bool {
	return m.rulesLocked(w.p.base) == blockedByShare && w.memory-max(0, m.avail.Memory) <= g.pool
}

// beforeLocked reports whether a's request arrived at seqA ranks before b's
// arrived at seqB: a borrows less per share, or as much and arrived first. Both
// have shares: a removed member is broken, so it has no request to rank.
func (g *Group) beforeLocked(a *Controller, seqA uint64, b *Controller, seqB uint64) bool {
	// borrowed(a)/shares(a) against borrowed(b)/shares(b), cross-multiplied.
	ra, rb := float64(a.borrowedLocked())*float64(b.shares), float64(b.borrowedLocked())*float64(a.shares)
	if ra != rb {
		return ra < rb
	}
	return seqA < seqB
}

// takenLocked re-runs the group's admission after c took memory (Consume, a memory
// grant) or its CPU marks began counting again (Resume). That lets nobody in by
// itself, but it changes who claims the pool and who ranks first for it (c now
// borrows more per share, or its head is held back by another rule), which may let
// another member's head borrow. Outside a group it does nothing.
func (c *Controller) takenLocked() {
	if c.group != nil {
		c.group.maybeAdmitLocked()
	}
}

// maybeAdmitLocked admits what every member's queues allow, until a pass over all
// of them settles nothing: an admission or memory grant that borrows changes who
// is ahead for the pool, and memory given back by one member may let another's waiters in. The
// order among members does not matter: what they take from their own shares is
// independent, and the pool goes only to the claimant ranked first.
func (g *Group) maybeAdmitLocked() {
	for progress := true; progress; {
		progress = false
		for _, m := range g.members {
			if m.admitQueueLocked() {
				progress = true
			}
		}
	}
}

// evictBorrowersLocked evicts other members' parked permits when that, and only
// that, lets c's request for base, arrived at seq, borrow from the pool: the
// request is held back by the pool alone (not by CPU, count or a limit), and its
// own member's parked permits could not let it in (evictionHelpsLocked said no).
// It considers only parked permits whose base memory is all borrowed (their member
// holds at least that much beyond its share, counting the evictions before them),
// oldest first by park order across the group, and evicts the shortest such run after which the
// request is admitted, with ranks and claims re-computed as they would be. It
// reports whether it evicted anything; if no run lets the request in, it evicts
// nothing.
//
// The what-if is computed by giving the candidates' base resources back to their
// members' availability and taking them away again, all in the caller's one hold
// of the group's lock, so nobody sees the intermediate state. Eviction changes
// nothing else the rules read: parked permits' CPU marks do not count, and
// memory a parked permit consumed stays accounted to it.
func (g *Group) evictBorrowersLocked(c *Controller, base Resources, seq uint64) bool {
	if c.rulesLocked(base) != blockedByShare {
		return false
	}
	var cands []*Parked
	for _, m := range g.members {
		if m == c {
			continue
		}
		for pk := m.inactive.Front(); pk != nil; pk = pk.link.Next() {
			if pk.p.hasBase {
				cands = append(cands, pk)
			}
		}
	}
	if len(cands) == 0 {
		return false
	}
	slices.SortFunc(cands, func(a, b *Parked) int { return cmp.Compare(a.seq, b.seq) })
	var run []*Parked
	lets := false
	for _, pk := range cands {
		m := pk.p.c
		if b := m.borrowedLocked(); b == 0 || pk.p.base.Memory > b {
			// Evicting it would take its member below its share: that memory is
			// not lent, so another member's request never takes it.
			continue
		}
		m.avail = m.avail.Add(pk.p.base)
		run = append(run, pk)
		if c.admissionLocked(base, seq) == admissible {
			lets = true
			break
		}
	}
	for _, pk := range run {
		pk.p.c.avail = pk.p.c.avail.Sub(pk.p.base)
	}
	if !lets {
		return false
	}
	for _, pk := range run {
		pk.p.c.evictLocked(pk, EvictedForAdmission)
	}
	return true
}
