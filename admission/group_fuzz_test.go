package admission_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/internal/fuzzprog"
)

// FuzzGroupModel drives a Group of three members and a sequential model of the
// sharing rules (the split by shares with the leftovers in the pool, admission
// within the share, "always admit one" per member, borrowing only what the pool
// has, the pool going to the claimant that borrows least per share and then to
// the earliest, FIFO within a member, live SetShares and SetTotal) with the same
// random program (re-running admission after everything that gives memory back,
// re-splits or takes memory), and checks after every step that they agree on which requests
// were admitted, on every member's use, share and borrowing, and on the pool.
// It runs in a synctest bubble, so every step ends with all goroutines settled.
func FuzzGroupModel(f *testing.F) {
	for _, seed := range [][]byte{
		{1, 2, 0, 0, 9, 0, 1, 9, 0, 2, 9, 1, 0, 7, 2, 5, 1, 0},
		{2, 1, 0, 1, 8, 1, 2, 8, 0, 0, 4, 4, 2, 0, 3, 1, 1, 3, 0},
		{0, 3, 0, 0, 9, 0, 0, 9, 1, 1, 9, 2, 2, 9, 5, 0, 3, 2, 2, 1},
		{1, 1, 0, 2, 7, 1, 2, 7, 0, 1, 6, 6, 0, 2, 4, 5, 1, 4, 1, 2, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) < 2 || len(prog) > 300 {
			return
		}
		synctest.Test(t, func(t *testing.T) { runGroupProgram(t, prog) })
	})
}

type gPermit struct {
	id     int
	member int
	memory int64 // base plus consumed
	seq    uint64
	real   *admission.Permit
	result chan result
	cancel context.CancelFunc
	queued bool
}

type gMember struct {
	c      *admission.Controller
	shares int64
	limits admission.Resources
	used   admission.Resources
	queue  []*gPermit
}

type gmodel struct {
	t       *testing.T
	g       *admission.Group
	frac    float64
	total   admission.Resources
	pool    int64
	members []*gMember
	permits []*gPermit // not released, in creation order
	seq     uint64
	next    int
	log     []string
}

func runGroupProgram(t *testing.T, prog []byte) {
	m := &gmodel{t: t, frac: []float64{0, 0.2, 0.5, 1}[prog[0]%4],
		total: limits(int64(prog[1]%3+1), 100)}
	m.g = admission.NewGroup(m.total, admission.WithName("model"), admission.WithSharedPool(m.frac))
	for i := range 3 {
		mb := &gMember{shares: int64(i + 1)}
		mb.c = m.g.Add(fmt.Sprint("m", i), mb.shares)
		m.members = append(m.members, mb)
		m.resplit()
	}
	m.check()
	r := fuzzprog.New(prog[2:])
	for r.More() {
		m.step(r)
		synctest.Wait()
		m.check()
	}
	for len(m.permits) > 0 {
		p := m.permits[0]
		if p.queued {
			m.cancelWait(p)
		} else {
			m.release(p)
		}
		synctest.Wait()
		m.check()
	}
	st := m.g.Stats()
	require.Zero(t, st.Borrowed, "the pool got everything back")
	for _, ms := range st.Members {
		require.Equal(t, admission.Resources{}, ms.Held, "member %s", ms.Name)
	}
}

func (m *gmodel) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

func (m *gmodel) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nafter:\n  %s\n%s", fmt.Sprintf(format, args...), strings.Join(m.log, "\n  "), m.g.Diagnostics(0))
}

func (m *gmodel) pick(b byte, ok func(*gPermit) bool) *gPermit {
	var c []*gPermit
	for _, p := range m.permits {
		if ok(p) {
			c = append(c, p)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[int(b)%len(c)]
}

func (m *gmodel) step(r *fuzzprog.Reader) {
	op, arg, arg2 := r.Byte()%7, r.Byte(), r.Byte()
	switch op {
	case 0, 1: // acquire in member arg, memory from arg2
		m.acquire(int(arg)%len(m.members), int64(arg2%12)*5)
	case 2:
		if p := m.pick(arg, func(p *gPermit) bool { return !p.queued }); p != nil {
			m.release(p)
		}
	case 3:
		if p := m.pick(arg, func(p *gPermit) bool { return p.queued }); p != nil {
			m.cancelWait(p)
		}
	case 4: // consume beyond the base: never blocks
		if p := m.pick(arg, func(p *gPermit) bool { return !p.queued }); p != nil {
			n := int64(arg2 % 20)
			m.logf("#%d Consume %d", p.id, n)
			require.NoError(m.t, p.real.Consume(limits(0, n)))
			p.memory += n
			m.members[p.member].used.Memory += n
			m.admit() // it may stop its member's head claiming the pool, or lower its rank
		}
	case 5:
		mb := m.members[int(arg)%len(m.members)]
		mb.shares = int64(arg2%5 + 1)
		m.logf("SetShares(%s, %d)", mb.c.Stats().Name, mb.shares)
		m.g.SetShares(mb.c, mb.shares)
		m.resplit()
	case 6:
		m.total = limits(int64(arg%3+1), int64(arg2%4+1)*50)
		m.logf("SetTotal(%v)", m.total)
		m.g.SetTotal(m.total)
		m.resplit()
	}
}

func (m *gmodel) acquire(i int, memory int64) {
	m.next++
	p := &gPermit{id: m.next, member: i, memory: memory, result: make(chan result, 1)}
	m.permits = append(m.permits, p)
	m.logf("#%d Acquire m%d %d", p.id, i, memory)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	c := m.members[i].c
	go func() {
		rp, err := c.Acquire(ctx, "op", memory)
		p.result <- result{rp, err}
	}()
	mb := m.members[i]
	if len(mb.queue) == 0 && m.admissible(mb, p, ^uint64(0)) {
		m.grant(p)
		return
	}
	m.seq++
	p.seq, p.queued = m.seq, true
	mb.queue = append(mb.queue, p)
}

func (m *gmodel) borrowed(mb *gMember) int64 { return max(0, mb.used.Memory-mb.limits.Memory) }

func (m *gmodel) lent() int64 {
	var n int64
	for _, mb := range m.members {
		n += m.borrowed(mb)
	}
	return n
}

// fitsOwn is the single-controller rule: count and memory cover it, or no count
// is in use.
func fitsOwn(mb *gMember, memory int64) (ok, countShort bool) {
	avail := mb.limits.Sub(mb.used)
	if avail.Covers(limits(1, memory)) || mb.used.Count == 0 {
		return true, false
	}
	return false, avail.Count < 1
}

func (m *gmodel) admissible(mb *gMember, p *gPermit, seq uint64) bool {
	ok, countShort := fitsOwn(mb, p.memory)
	if ok || countShort {
		return ok
	}
	availMem := mb.limits.Memory - mb.used.Memory
	if p.memory-max(0, availMem) > m.pool-m.lent() {
		return false
	}
	for _, o := range m.members {
		if o == mb || len(o.queue) == 0 {
			continue
		}
		h := o.queue[0]
		ok, countShort := fitsOwn(o, h.memory)
		if ok || countShort || h.memory-max(0, o.limits.Memory-o.used.Memory) > m.pool {
			continue // not a claimant
		}
		ro, rs := m.borrowed(o)*mb.shares, m.borrowed(mb)*o.shares
		if ro < rs || ro == rs && h.seq < seq {
			return false
		}
	}
	return true
}

func (m *gmodel) grant(p *gPermit) {
	p.queued = false
	mb := m.members[p.member]
	mb.used = mb.used.Add(limits(1, p.memory))
	m.logf("  #%d admitted", p.id)
}

func (m *gmodel) admit() {
	for progress := true; progress; {
		progress = false
		for _, mb := range m.members {
			for len(mb.queue) > 0 && m.admissible(mb, mb.queue[0], mb.queue[0].seq) {
				p := mb.queue[0]
				mb.queue = mb.queue[1:]
				m.grant(p)
				progress = true
			}
		}
	}
}

func (m *gmodel) resplit() {
	var sum int64
	for _, mb := range m.members {
		sum += mb.shares
	}
	rest := m.total.Memory - int64(m.frac*float64(m.total.Memory))
	given := int64(0)
	for _, mb := range m.members {
		mb.limits = limits(m.total.Count, rest*mb.shares/sum)
		given += mb.limits.Memory
	}
	m.pool = m.total.Memory - given
	m.admit()
}

func (m *gmodel) release(p *gPermit) {
	m.logf("#%d Release", p.id)
	m.await(p)
	p.real.Release()
	mb := m.members[p.member]
	mb.used = mb.used.Sub(limits(1, p.memory))
	m.forget(p)
	m.admit()
}

func (m *gmodel) cancelWait(p *gPermit) {
	m.logf("#%d cancel", p.id)
	p.cancel()
	synctest.Wait()
	r := <-p.result
	require.ErrorIs(m.t, r.err, context.Canceled)
	mb := m.members[p.member]
	mb.queue = slices.DeleteFunc(mb.queue, func(q *gPermit) bool { return q == p })
	m.forget(p)
	m.admit()
}

func (m *gmodel) forget(p *gPermit) {
	m.permits = slices.DeleteFunc(m.permits, func(q *gPermit) bool { return q == p })
}

// await takes an admitted permit's result from its Acquire once.
func (m *gmodel) await(p *gPermit) {
	if p.real != nil {
		return
	}
	r := <-p.result
	require.NoError(m.t, r.err)
	p.real = r.p
	p.cancel()
}

func (m *gmodel) check() {
	m.t.Helper()
	for _, p := range m.permits {
		select {
		case r := <-p.result:
			if p.queued {
				m.fatalf("#%d: Acquire returned (%v) while the model has it queued", p.id, r.err)
			}
			require.NoError(m.t, r.err)
			p.real = r.p
			p.cancel()
		default:
			if !p.queued && p.real == nil {
				m.fatalf("#%d: the model admitted it, the group did not", p.id)
			}
		}
	}
	st := m.g.Stats()
	if st.Pool != m.pool || st.Borrowed != m.lent() {
		m.fatalf("pool %d lent %d; model: pool %d lent %d", st.Pool, st.Borrowed, m.pool, m.lent())
	}
	for i, mb := range m.members {
		ms := st.Members[i]
		if ms.Limits != mb.limits || ms.Held != mb.used || ms.Borrowed != m.borrowed(mb) || ms.Waiters != len(mb.queue) {
			m.fatalf("member %s: limits %v used %v borrowed %d queued %d; model: %v %v %d %d", ms.Name,
				ms.Limits, ms.Held, ms.Borrowed, ms.Waiters, mb.limits, mb.used, m.borrowed(mb), len(mb.queue))
		}
	}
}
