package admission_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/admission"
	"github.com/fairsem/semaphore/internal/fuzzprog"
)

// FuzzControllerModel drives a Controller and a sequential model of its admission
// rules (the package documentation's four conditions, FIFO, eviction only for
// resources, CPU marks that count only while a permit is active, released as a
// terminal state) with the same random program, and checks after every step that
// they agree: which requests were admitted, resources in use, queue length, parked,
// need-CPU and awaiting counts, and every permit's state. It runs in a synctest
// bubble so that every step ends with all goroutines settled.
func FuzzControllerModel(f *testing.F) {
	for _, seed := range [][]byte{
		{3, 5, 0, 2, 0, 3, 0, 1, 1, 0, 2, 0, 5, 0, 4, 1},
		{2, 4, 0, 1, 3, 0, 0, 2, 4, 0, 0, 1, 6, 0, 5, 0, 1},
		{1, 9, 0, 5, 0, 5, 5, 0, 0, 1, 7, 2, 1, 0, 1, 1},
		{4, 2, 0, 1, 2, 0, 0, 3, 8, 1, 3, 0, 4, 0, 9, 0},
		{2, 6, 0, 4, 0, 4, 5, 1, 0, 2, 6, 1, 9, 5, 7, 3, 1, 0},
		// Park with a CPU mark, evicted for count, the other released, readmitted
		// with the mark; then every call on the released permit; then the mark ends.
		{0, 3, 0, 1, 3, 0, 7, 0, 0, 1, 2, 1, 8, 1, 10, 0, 10, 1, 10, 2, 10, 3, 10, 4, 10, 5, 10, 6, 10, 7, 11, 1, 4, 0},
		// A parked permit's mark and await do not hold a newcomer back; resumed, they do.
		{3, 7, 0, 1, 3, 0, 5, 1, 7, 0, 0, 2, 8, 0, 0, 2, 4, 0, 5, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) < 2 || len(prog) > 300 {
			return
		}
		synctest.Test(t, func(t *testing.T) { runControllerProgram(t, prog) })
	})
}

// mPermit is the model's view of one permit, next to the real one.
type mPermit struct {
	id       int
	real     *admission.Permit
	result   chan result // while its Acquire or Readmit runs
	cancel   context.CancelFunc
	base     admission.Resources
	hasBase  bool
	consumed int64
	state    admission.State // Active stands for the active states
	cpu      []func()        // held NeedCPU releases
	awaits   []func()        // held Await releases
	parked   *admission.Parked
}

type cmodel struct {
	t        *testing.T
	c        *admission.Controller
	limits   admission.Resources
	avail    admission.Resources
	cpuConc  int        // the CPU concurrency
	permits  []*mPermit // every permit not released, in creation order
	queue    []*mPermit // waiting for admission, FIFO
	inactive []*mPermit // parked, oldest first
	aborted  []*mPermit // cancelled new requests whose Acquire has yet to be seen returning
	released []*mPermit // released permits, still called into; their old marks' done functions kept
	log      []string
	next     int
}

func runControllerProgram(t *testing.T, prog []byte) {
	m := &cmodel{t: t, limits: limits(int64(prog[0]%4+1), int64(prog[1]%8+2)*10), cpuConc: 1}
	m.avail = m.limits
	m.c = admission.New(m.limits, admission.WithName("model"))
	r := fuzzprog.New(prog[2:])
	for r.More() {
		m.step(r)
		synctest.Wait()
		m.check()
	}
	// Shut down: Break fails every waiter and evicts every parked permit; Drain
	// returns once the permits still held are released, and not before.
	m.breakAll()
	synctest.Wait()
	m.check()
	drained := make(chan error, 1)
	go func() { drained <- m.c.Drain(context.Background()) }()
	for len(m.permits) > 0 {
		synctest.Wait()
		if len(drained) > 0 {
			m.fatalf("Drain returned with %d permits held", len(m.permits))
		}
		m.release(m.permits[0])
		synctest.Wait()
		m.check()
	}
	require.NoError(t, <-drained)
	_, err := m.c.Acquire(context.Background(), "after", 0)
	require.ErrorIs(t, err, semaphore.ErrBroken, "Break is terminal")
	for _, p := range m.released {
		for _, done := range append(p.cpu, p.awaits...) {
			done()
		}
	}
	st := m.c.Stats()
	require.Equal(t, admission.Resources{}, st.Held, "everything came back")
	require.Zero(t, st.CurrentPermits)
	require.Zero(t, st.NeedCPUPermits)
	require.Zero(t, st.AwaitingPermits)
}

func (m *cmodel) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

func (m *cmodel) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nafter:\n  %s\n%s", fmt.Sprintf(format, args...), strings.Join(m.log, "\n  "), m.c.Diagnostics(0))
}

// pick returns one of the permits matching ok, chosen by b, or nil.
func (m *cmodel) pick(b byte, ok func(*mPermit) bool) *mPermit {
	var c []*mPermit
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

func active(p *mPermit) bool { return p.state == admission.Active }

// settled reports whether p is not waiting for admission: its marks may change.
func settled(p *mPermit) bool { return p.state != admission.WaitingForAdmission && p.real != nil }

func (m *cmodel) step(r *fuzzprog.Reader) {
	op, arg := r.Byte()%12, r.Byte()
	switch op {
	case 0, 1:
		m.acquire(int64(arg%6) * 10)
	case 2:
		if p := m.pick(arg, func(p *mPermit) bool { return p.state != admission.WaitingForAdmission }); p != nil {
			m.release(p)
		}
	case 3:
		// Active, parked or evicted: a parked or evicted permit's mark is kept
		// but does not count until the permit is active again.
		if p := m.pick(arg, settled); p != nil {
			m.logf("#%d NeedCPU (%s)", p.id, p.state)
			p.cpu = append(p.cpu, p.real.NeedCPU())
			m.admit()
		}
	case 4:
		if p := m.pick(arg, func(p *mPermit) bool { return len(p.cpu) > 0 }); p != nil {
			m.logf("#%d NeedCPU done (%s)", p.id, p.state)
			p.cpu[len(p.cpu)-1]()
			p.cpu = p.cpu[:len(p.cpu)-1]
			m.admit()
		}
	case 5:
		if p := m.pick(arg, settled); p != nil {
			if len(p.awaits) > 0 && arg%2 == 0 {
				m.logf("#%d Await done (%s)", p.id, p.state)
				p.awaits[len(p.awaits)-1]()
				p.awaits = p.awaits[:len(p.awaits)-1]
			} else {
				m.logf("#%d Await (%s)", p.id, p.state)
				p.awaits = append(p.awaits, p.real.Await())
			}
			m.admit()
		}
	case 6:
		if p := m.pick(arg, active); p != nil {
			mem := int64(arg%4) * 10
			m.logf("#%d Consume %d", p.id, mem)
			require.NoError(m.t, p.real.Consume(limits(0, mem)))
			p.consumed += mem
			m.avail.Memory -= mem
		}
	case 7:
		if p := m.pick(arg, active); p != nil { // marks and all: they stop counting
			m.logf("#%d Park", p.id)
			p.parked = park(m.t, m.c, p.real, &closer{})
			p.state = admission.Inactive
			m.inactive = append(m.inactive, p)
			m.admit()
		}
	case 8:
		if p := m.pick(arg, func(p *mPermit) bool { return p.state == admission.Inactive }); p != nil && arg%2 == 0 {
			m.logf("#%d Resume", p.id)
			_, ok := p.parked.Resume()
			require.True(m.t, ok)
			p.state = admission.Active
			m.inactive = slices.DeleteFunc(m.inactive, func(q *mPermit) bool { return q == p })
		} else if p := m.pick(arg, func(p *mPermit) bool { return p.state == admission.Evicted }); p != nil {
			m.readmit(p)
		} else if p := m.pick(arg, func(p *mPermit) bool { return p.state == admission.WaitingForAdmission }); p != nil {
			m.cancelWait(p)
		}
	case 9:
		l := limits(int64(arg%4+1), int64(arg%7+1)*10)
		m.logf("SetLimits %v", l)
		m.c.SetLimits(l)
		m.avail = m.avail.Add(l.Sub(m.limits))
		m.limits = l
		m.admit()
	case 10:
		m.callReleased(arg)
	case 11:
		n := int(arg%3) + 1
		m.logf("SetCPUConcurrency %d", n)
		m.c.SetCPUConcurrency(n)
		m.cpuConc = n
		m.admit()
	}
}

// callReleased calls into a released permit: every call fails with ErrReleased or
// does nothing, and takes nothing.
func (m *cmodel) callReleased(arg byte) {
	if len(m.released) == 0 {
		return
	}
	p := m.released[int(arg/8)%len(m.released)]
	ctx := context.Background()
	switch arg % 8 {
	case 0:
		m.logf("#%d (released) NeedCPU", p.id)
		p.real.NeedCPU()()
	case 1:
		m.logf("#%d (released) NeedCPU, Await held", p.id)
		p.cpu = append(p.cpu, p.real.NeedCPU())
		p.awaits = append(p.awaits, p.real.Await())
	case 2:
		m.logf("#%d (released) Consume", p.id)
		require.ErrorIs(m.t, p.real.Consume(limits(0, 10)), admission.ErrReleased)
	case 3:
		m.logf("#%d (released) RequestMemory", p.id)
		require.ErrorIs(m.t, p.real.RequestMemory(ctx, 10), admission.ErrReleased)
	case 4:
		m.logf("#%d (released) Park", p.id)
		_, err := m.c.Park(p.real, &closer{})
		require.ErrorIs(m.t, err, admission.ErrReleased)
	case 5:
		m.logf("#%d (released) Readmit", p.id)
		require.ErrorIs(m.t, p.real.Readmit(ctx), admission.ErrReleased)
	case 6:
		m.logf("#%d (released) done functions of its old marks", p.id)
		for _, done := range append(p.cpu, p.awaits...) {
			done()
		}
		p.cpu, p.awaits = nil, nil
	case 7:
		m.logf("#%d (released) Release, ReleaseBase, Return", p.id)
		p.real.Release()
		p.real.ReleaseBase()
		p.real.Return(limits(0, 10))
	}
	require.Equal(m.t, admission.Released, p.real.State())
	require.Equal(m.t, admission.Resources{}, p.real.Consumed())
}

func (m *cmodel) newPermit(memory int64) *mPermit {
	m.next++
	p := &mPermit{id: m.next, base: limits(1, memory)}
	m.permits = append(m.permits, p)
	return p
}

func (m *cmodel) acquire(memory int64) {
	p := m.newPermit(memory)
	m.logf("#%d Acquire %d", p.id, memory)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.result = cancel, make(chan result, 1)
	go func() {
		rp, err := m.c.Acquire(ctx, "op", memory)
		p.result <- result{rp, err}
	}()
	m.enter(p)
}

func (m *cmodel) readmit(p *mPermit) {
	m.logf("#%d Readmit", p.id)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.result = cancel, make(chan result, 1)
	go func() { p.result <- result{p.real, p.real.Readmit(ctx)} }()
	m.enter(p)
}

// enter is the model of admission for a new or readmitted request.
func (m *cmodel) enter(p *mPermit) {
	p.state = admission.WaitingForAdmission
	for len(m.queue) == 0 {
		ok, cpu := m.admissible(p)
		if ok {
			m.grant(p)
			return
		}
		if cpu || !m.evictionHelps(p) {
			break
		}
		m.evictOldest()
	}
	m.queue = append(m.queue, p)
}

// cpuCounts is what the controller's need-CPU and awaiting counts should be: the
// marks of active permits only.
func (m *cmodel) cpuCounts() (needCPU, awaiting int) {
	for _, q := range m.permits {
		if q.state == admission.Active && len(q.cpu) > 0 {
			needCPU++
			if len(q.awaits) > 0 {
				awaiting++
			}
		}
	}
	return needCPU, awaiting
}

func (m *cmodel) admissible(p *mPermit) (ok, cpuBound bool) {
	needCPU, awaiting := m.cpuCounts()
	if needCPU-awaiting >= m.cpuConc {
		return false, true
	}
	return m.avail.Covers(p.base) || m.avail.Count == m.limits.Count, false
}

// evictionHelps: would evicting every parked permit let p in?
func (m *cmodel) evictionHelps(p *mPermit) bool {
	after := m.avail
	for _, q := range m.inactive {
		if q.hasBase {
			after = after.Add(q.base)
		}
	}
	return len(m.inactive) > 0 && (after.Covers(p.base) || after.Count == m.limits.Count)
}

func (m *cmodel) grant(p *mPermit) {
	m.avail = m.avail.Sub(p.base)
	p.hasBase = true
	p.state = admission.Active
}

func (m *cmodel) evictOldest() {
	p := m.inactive[0]
	m.inactive = m.inactive[1:]
	p.state = admission.Evicted
	m.releaseBase(p)
}

func (m *cmodel) releaseBase(p *mPermit) {
	if p.hasBase {
		m.avail = m.avail.Add(p.base)
		p.hasBase = false
	}
}

// admit is the model's maybeAdmit: grant from the head, evicting for resources.
func (m *cmodel) admit() {
	for len(m.queue) > 0 {
		head := m.queue[0]
		ok, cpu := m.admissible(head)
		switch {
		case ok:
			m.queue = m.queue[1:]
			m.grant(head)
		case !cpu && m.evictionHelps(head):
			m.evictOldest()
		default:
			return
		}
	}
}

func (m *cmodel) cancelWait(p *mPermit) {
	m.logf("#%d cancel", p.id)
	p.cancel()
	m.queue = slices.DeleteFunc(m.queue, func(q *mPermit) bool { return q == p })
	if p.real == nil {
		p.state = admission.Aborted
		m.forget(p)
		m.aborted = append(m.aborted, p)
	} else {
		p.state = admission.Evicted
	}
	m.admit()
}

// breakAll is Break: queued requests fail (a new permit is aborted, a
// readmission leaves its permit evicted) and parked permits are evicted.
func (m *cmodel) breakAll() {
	m.logf("Break")
	m.c.Break(nil)
	for _, p := range m.queue {
		if p.real == nil {
			p.state = admission.Aborted
			m.forget(p)
			m.aborted = append(m.aborted, p)
		} else {
			p.state = admission.Evicted
		}
	}
	m.queue = nil
	for len(m.inactive) > 0 {
		m.evictOldest()
	}
}

func (m *cmodel) release(p *mPermit) {
	m.logf("#%d Release", p.id)
	p.real.Release()
	m.inactive = slices.DeleteFunc(m.inactive, func(q *mPermit) bool { return q == p })
	m.releaseBase(p)
	m.avail.Memory += p.consumed
	p.consumed = 0
	// Release drops the marks from the counts; their done functions, kept to be
	// called later, must do nothing.
	m.forget(p)
	m.released = append(m.released, p)
	m.admit()
}

func (m *cmodel) forget(p *mPermit) {
	m.permits = slices.DeleteFunc(m.permits, func(q *mPermit) bool { return q == p })
}

// check collects finished requests and compares the controller with the model.
func (m *cmodel) check() {
	m.t.Helper()
	for _, p := range append(slices.Clone(m.permits), m.aborted...) {
		if p.result == nil {
			continue
		}
		select {
		case r := <-p.result:
			p.result = nil
			if p.cancel != nil {
				p.cancel()
			}
			switch {
			case r.err == nil && p.state == admission.Active:
				p.real = r.p
			case r.err != nil && (p.state == admission.Aborted || p.state == admission.Evicted):
			default:
				m.fatalf("#%d finished with %v, model says %s", p.id, r.err, p.state)
			}
		default:
			if p.state != admission.WaitingForAdmission {
				m.fatalf("#%d still waiting, model says %s", p.id, p.state)
			}
		}
	}
	m.aborted = nil
	st := m.c.Stats()
	used := m.limits.Sub(m.avail)
	needCPU, awaiting := m.cpuCounts()
	if st.Held != used || st.Waiters != len(m.queue) || st.Inactive != len(m.inactive) ||
		st.NeedCPUPermits != needCPU || st.AwaitingPermits != awaiting {
		m.fatalf("stats: used %v queued %d inactive %d need-cpu %d awaiting %d; model: used %v queued %d inactive %d need-cpu %d awaiting %d",
			st.Held, st.Waiters, st.Inactive, st.NeedCPUPermits, st.AwaitingPermits,
			used, len(m.queue), len(m.inactive), needCPU, awaiting)
	}
	for _, p := range m.permits {
		if p.real == nil {
			continue
		}
		got, want := p.real.State(), p.state
		if want == admission.Active && len(p.cpu) > 0 {
			want = admission.ActiveNeedCPU
			if len(p.awaits) > 0 {
				want = admission.ActiveAwait
			}
		}
		if got != want {
			m.fatalf("#%d state %s, model says %s", p.id, got, want)
		}
	}
}
