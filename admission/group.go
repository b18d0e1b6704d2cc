package admission

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// A Group splits one budget of memory between several controllers, its members,
// one per workload, by shares, and keeps part of it as a shared pool that any
// member may borrow from when its own share is used up. Each member is a full
// Controller (FIFO queue, CPU-aware admission, shedding, parking, diagnostics)
// whose memory limit is its share; see the package documentation for how shares
// are split, who may borrow, and in what order.
//
// Every member uses the group's lock, so a decision that reads several members
// (lending from the pool, choosing who borrows next) is made and acted on in one
// hold of it, and there is no lock order to get wrong.
type Group struct {
	mu *lock // shared with every member

	// Fixed after NewGroup.
	name     string
	poolFrac float64 // the shared pool's fraction of the total memory

	// Guarded by mu.
	total   Resources     // Count: each member's count limit; Memory: split by shares plus the pool
	pool    int64         // memory in the shared pool: total.Memory minus the members' shares
	members []*Controller // in Add order; a removed member stays until its permits are released
	seq     uint64        // arrival order of the members' queued requests (waiter.seq) and parked permits (Parked.seq)
}

// MaxShares is the most shares a member may have. With shares in [1, MaxShares]
// the group's sum of shares cannot overflow.
const MaxShares = 1 << 32

// WithSharedPool keeps fraction (from 0 to 1) of the group's memory out of the
// members' shares, as a pool that any member may borrow from once its own share
// is used up. The default is 0: no pool, each member is bounded by its share.
func WithSharedPool(fraction float64) GroupOption {
	return groupOption(func(g *Group) { g.poolFrac = fraction })
}

// NewGroup returns a group with no members; name it with WithName (the name is
// used in dumps and messages). total.Memory is split between the members by
// shares, after setting aside the shared pool; total.Count is the count limit of
// each member. It panics on a negative total or a pool fraction outside [0, 1].
//
// A Group must be created with NewGroup: a zero Group panics at its first use,
// with a message that says so.
func NewGroup(total Resources, opts ...GroupOption) *Group {
	g := &Group{mu: new(lock), total: total}
	for _, o := range opts {
		o.applyGroup(g)
	}
	switch {
	case total.Count < 0 || total.Memory < 0:
		g.panicf("NewGroup: negative total %v", total)
	case !(g.poolFrac >= 0 && g.poolFrac <= 1):
		g.panicf("WithSharedPool(%g): must be between 0 and 1", g.poolFrac)
	}
	g.pool = total.Memory
	return g
}

// made panics for a zero Group: it has no lock, no total and no members to
// apply. Every exported method checks it first.
func (g *Group) made() {
	if g.mu == nil {
		panic("admission: zero Group: create it with admission.NewGroup")
	}
}

// lock takes the group's lock, shared by every member.
func (g *Group) lock() {
	g.made()
	g.mu.Lock()
}

func (g *Group) panicf(format string, args ...any) {
	label := fmt.Sprintf("unnamed admission group %p", g)
	if g.name != "" {
		label = fmt.Sprintf("admission %q: group", g.name)
	}
	panic(label + ": " + fmt.Sprintf(format, args...))
}

// Add creates a member controller named name with the given shares and options,
// and re-splits the memory: every member's memory limit becomes its share. The
// members keep whatever their permits hold; a member left over its new share
// admits nothing more until it is back under it (or can borrow). The name is an
// argument, not a WithName option, because it is the member's identity in the
// group (in Stats, dumps and metrics). Add panics if shares is outside
// [1, MaxShares], if an option is invalid, or if WithName is among the options.
func (g *Group) Add(name string, shares int64, opts ...Option) *Controller {
	g.made()
	if shares < 1 || shares > MaxShares {
		g.panicf("Add(%q, %d): shares must be between 1 and MaxShares", name, shares)
	}
	for _, o := range opts {
		if n, ok := o.(NameOption); ok {
			g.panicf("Add(%q, %d, WithName(%q)): the member's name is Add's argument", name, shares, string(n))
		}
	}
	c := New(Resources{}, opts...)
	c.name, c.stats.Name = name, name
	c.mu = g.mu // before anyone else can see c
	c.group = g
	g.lock()
	defer g.unlock()
	c.shares = shares
	g.members = append(g.members, c)
	g.resplitLocked()
	return c
}

// SetShares changes a member's shares and re-splits the memory live, without
// taking anything back: members over their new share admit nothing more until
// they are back under it (or can borrow), and members whose share grew admit the
// waiters that now fit. It panics if c is not a member of g, was removed, or
// shares is outside [1, MaxShares].
func (g *Group) SetShares(c *Controller, shares int64) {
	g.made()
	if c.group != g {
		g.panicf("SetShares(%q, %d): not a member", c.name, shares)
	}
	if shares < 1 || shares > MaxShares {
		g.panicf("SetShares(%q, %d): shares must be between 1 and MaxShares", c.name, shares)
	}
	g.lock()
	if c.removed {
		g.unlock()
		g.panicf("SetShares(%q, %d): the member was removed", c.name, shares)
	}
	defer g.unlock()
	c.shares = shares
	g.resplitLocked()
}

// SetTotal changes the group's total, re-splitting it live as SetShares does. It
// panics on a negative total.
func (g *Group) SetTotal(total Resources) {
	g.made()
	if total.Count < 0 || total.Memory < 0 {
		g.panicf("SetTotal(%v): negative total", total)
	}
	g.lock()
	defer g.unlock()
	g.total = total
	g.resplitLocked()
}

// Remove takes a member out of the split, and breaks it as Controller.Break does:
// new and queued requests fail with an error matching semaphore.ErrBroken (its
// cause says the member was removed) and parked permits are evicted. Its admitted
// permits keep what they hold, counted as borrowed from the pool (its share is
// now zero), until they are released; then it leaves the group. The others'
// shares grow at once. Call c.Drain to wait for its permits. Remove does nothing
// for a member already removed, and panics if c is not a member of g.
func (g *Group) Remove(c *Controller) {
	g.made()
	if c.group != g {
		g.panicf("Remove(%q): not a member", c.name)
	}
	g.lock()
	defer g.unlock()
	if c.removed {
		return
	}
	c.removed = true
	c.shares = 0
	c.breakLocked(errors.New("removed from its group"))
	c.checkDrainedLocked() // breakLocked does nothing if c was broken before: drop it if no permit is left
	g.resplitLocked()
}

// unlock releases the group's lock and runs the deferred work.
func (g *Group) unlock() { g.mu.unlock() }

// dropLocked removes a drained, removed member. It builds a new slice, so that a
// loop over the old one (maybeAdmitLocked) is not disturbed.
func (g *Group) dropLocked(c *Controller) {
	g.members = slices.DeleteFunc(slices.Clone(g.members), func(m *Controller) bool { return m == c })
}

// poolSizeLocked is the pool's fraction of the total, rounded down, before the
// leftovers of the split are added to it.
func (g *Group) poolSizeLocked() int64 {
	f := g.poolFrac * float64(g.total.Memory)
	if f >= float64(g.total.Memory) {
		return g.total.Memory // also where converting f back would overflow int64
	}
	return int64(f)
}

// resplitLocked gives every member its share of the memory outside the pool, in
// proportion to its shares (rounded down; what rounding leaves goes to the pool,
// so the shares and the pool add up to the total exactly), and each the group's
// count limit, then admits whatever that lets in.
func (g *Group) resplitLocked() {
	var sum uint64
	for _, m := range g.members {
		sum += uint64(m.shares)
	}
	rest := g.total.Memory - g.poolSizeLocked()
	given := int64(0)
	for _, m := range g.members {
		share := int64(0)
		if m.shares > 0 {
			// rest x shares / sum without overflow: the quotient is at most rest.
			hi, lo := bits.Mul64(uint64(rest), uint64(m.shares))
			q, _ := bits.Div64(hi, lo, sum)
			share = int64(q)
		}
		m.setLimitsLocked(Resources{Count: g.total.Count, Memory: share})
		given += share
	}
	g.pool = g.total.Memory - given
	g.maybeAdmitLocked()
}
