package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsem/semaphore/internal/statsline"
)

// GroupStats is a snapshot of a group: its split, what its members borrow, and
// each member's Stats.
type GroupStats struct {
	Name     string
	Total    Resources // Count: each member's count limit; Memory: the whole budget
	Pool     int64     // the shared pool: Total.Memory minus the members' shares
	Borrowed int64     // lent out of the pool now; may exceed Pool after a re-split or Consume
	// Bottleneck names the member with the most requests queued (admission and
	// memory), ties going to the one that borrows more per share; "" when nothing
	// is queued.
	Bottleneck string
	Members    []MemberStats // in Add order
}

// MemberStats is one member's part of GroupStats.
type MemberStats struct {
	Shares  int64 // 0 once removed
	Removed bool  // removed, still holding memory
	Stats         // Limits.Memory is its share; Borrowed what it holds from the pool
}

// String writes s as a line of the group's own fields followed by one line per
// member, indented by two spaces, in Add order, for example
//
//	admission group "reads" count=100 memory=64M pool=16M borrowed=2M bottleneck="batch" members=2
//	  admission "interactive" shares=3 removed=false count_limit=100 memory_limit=36M ...
//	  admission "batch" shares=1 removed=false count_limit=100 memory_limit=12M ...
//
// count is each member's count limit and memory the whole budget (Total);
// bottleneck is "none" while nothing is queued. Names are quoted.
func (s GroupStats) String() string {
	l := statsline.New("admission group", s.Name)
	l.Int("count", s.Total.Count)
	l.Word("memory", formatBytes(s.Total.Memory))
	l.Word("pool", formatBytes(s.Pool))
	l.Word("borrowed", formatBytes(s.Borrowed))
	if s.Bottleneck == "" {
		l.Word("bottleneck", "none")
	} else {
		l.Quote("bottleneck", s.Bottleneck)
	}
	l.Int("members", int64(len(s.Members)))
	var b strings.Builder
	b.WriteString(l.String())
	for _, m := range s.Members {
		b.WriteString("\n  " + m.String())
	}
	return b.String()
}

// String writes m on one line: the member's Stats with its shares and whether
// it was removed after its name, for example
//
//	admission "batch" shares=1 removed=false count_limit=100 memory_limit=12M ...
func (m MemberStats) String() string {
	l := statsline.New("admission", m.Name)
	l.Int("shares", m.Shares)
	l.Bool("removed", m.Removed)
	m.writeFields(l)
	return l.String()
}

// Stats returns a snapshot of the group and of every member, taken in one hold of
// the group's lock, so the numbers add up.
func (g *Group) Stats() GroupStats {
	g.lock()
	defer g.unlock()
	return g.statsLocked()
}

func (g *Group) statsLocked() GroupStats {
	st := GroupStats{Name: g.name, Total: g.total, Pool: g.pool, Borrowed: g.lentLocked()}
	for _, m := range g.members {
		st.Members = append(st.Members, MemberStats{Shares: m.shares, Removed: m.removed, Stats: m.statsLocked()})
	}
	if b := g.bottleneckLocked(); b != nil {
		st.Bottleneck = b.name
	}
	return st
}

// bottleneckLocked is the member GroupStats.Bottleneck names, or nil.
func (g *Group) bottleneckLocked() *Controller {
	var worst *Controller
	queued := func(m *Controller) int { return m.queue.Len() + m.memQueue.Len() }
	for _, m := range g.members {
		if queued(m) == 0 {
			continue
		}
		if worst == nil || cmp.Or(cmp.Compare(queued(m), queued(worst)),
			cmp.Compare(float64(m.borrowedLocked())*float64(worst.shares), float64(worst.borrowedLocked())*float64(m.shares))) > 0 {
			worst = m
		}
	}
	return worst
}

// Diagnostics renders a dump of the group, taken in one hold of its lock: a header
// with the total and the shared pool's use, the bottleneck member, a table of the
// members (shares, share, memory used, borrowed, queued, own bottlenecks, largest
// borrower first), then each member's Diagnostics with maxLines.
func (g *Group) Diagnostics(maxLines int) string {
	g.lock()
	defer g.unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "Group %q with count %d per member and %s memory, shared pool %s/%s lent\n",
		g.name, g.total.Count, formatBytes(g.total.Memory), formatBytes(g.lentLocked()), formatBytes(g.pool))
	if m := g.bottleneckLocked(); m != nil {
		fmt.Fprintf(&b, "Bottleneck member: %q\n", m.name)
	}
	members := slices.Clone(g.members)
	slices.SortStableFunc(members, func(x, y *Controller) int { return cmp.Compare(y.borrowedLocked(), x.borrowedLocked()) })
	fmt.Fprintf(&b, "%-8s%-8s%-8s%-10s%-8s%-20s%s\n", "shares", "share", "used", "borrowed", "queued", "bottleneck(s)", "member")
	for _, m := range members {
		name := strconv.Quote(m.name)
		if m.removed {
			name += " (removed)"
		}
		fmt.Fprintf(&b, "%-8d%-8s%-8s%-10s%-8d%-20s%s\n", m.shares, formatBytes(m.limits.Memory), formatBytes(m.usedLocked().Memory),
			formatBytes(m.borrowedLocked()), m.queue.Len()+m.memQueue.Len(), strings.Join(m.bottlenecksLocked(), ","), name)
	}
	for _, m := range g.members {
		b.WriteString("\n")
		b.WriteString(m.dumpTextLocked("", nil, maxLines))
	}
	return b.String()
}
