package keyed_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
)

// fairKey is the model of one key of a set with a limit.
type fairKey struct {
	capacity, weight, guarantee int64
	keyFree                     int64
	keyLine                     []*modelCall // waiting for the key's units
	limitLine                   []*modelCall // holding the key's units, waiting for the limit's
	held                        int64        // units granted at the limit, not released
	granted                     uint64       // grants at the limit since the key became active
	vfinish                     int64        // virtual time at which its last grant from a line ends
	stale                       bool         // vfinish is from before the key was last made active
}

// fairModel is the sequential model of a set with a limit: per key a FIFO line
// over the key's capacity, then per key a FIFO line at the limit; the limit's
// free units go to the head of the line of the key below its guarantee, then
// with the earliest start tag (the virtual time its last grant from a line
// ends, advanced by units/weight per grant, or the virtual time now if later),
// then whose head queued first, as long as that head fits.
type fairModel struct {
	limit, free int64
	keys        map[string]*fairKey
	order       []string
	seq         map[*modelCall]int
	nextSeq     int
	broken      bool
	calls       []*modelCall
	now         time.Time
	freed       int64 // units freed at the limit so far: released, or added by Resize
	vnow        int64 // start tag of the last grant from a line
	// bound holds, for calls whose guarantee bound applies, the freed count at
	// which they must have been granted.
	bound map[*modelCall]int64
}

func (m *fairModel) waitingAtLimit() bool {
	for _, k := range m.keys {
		if len(k.limitLine) > 0 {
			return true
		}
	}
	return false
}

// toLimit moves c, granted its key's units, to the limit.
func (m *fairModel) toLimit(c *modelCall) {
	k := m.keys[c.key]
	switch {
	case c.n > m.limit:
		k.keyFree += c.n
		c.state, c.err = "failed", semaphore.ErrTooLarge
		m.settleKey(c.key)
	case !m.waitingAtLimit() && c.n <= m.free:
		m.free -= c.n
		k.held += c.n
		k.granted++
		c.state = "held"
	default:
		if k.stale {
			k.vfinish, k.stale = m.vnow, false // a key made active anew owes nothing and is owed nothing
		}
		c.state = "limit"
		m.seq[c] = m.nextSeq
		m.nextSeq++
		k.limitLine = append(k.limitLine, c)
		m.noteBound(c)
		m.dispatch()
	}
}

// noteBound records the guarantee's bound for c when it applies: c's key is
// the only key below its guarantee with calls waiting at the limit, its
// waiting calls ask for no more than it lacks, and it still lacks some when c
// reaches the head of its line. Then c is granted by the time
// the units freed since it queued, plus those free then (minus those held
// beyond the limit after a shrinking Resize), cover what its key's calls up to
// c ask for.
func (m *fairModel) noteBound(c *modelCall) {
	k := m.keys[c.key]
	if k.held >= k.guarantee || m.otherOwing(c.key) {
		return
	}
	var ask int64
	for _, w := range k.limitLine {
		ask += w.n
	}
	if ask > k.guarantee-k.held || ask-c.n >= k.guarantee-k.held {
		return // asks for more than the key lacks, or comes when it no longer lacks any
	}
	m.bound[c] = m.freed - m.free + ask // free < 0 after a shrinking Resize: that debt first
}

// otherOwing reports whether a key other than key is below its guarantee with
// calls waiting at the limit.
func (m *fairModel) otherOwing(key string) bool {
	for name, k := range m.keys {
		if name != key && len(k.limitLine) > 0 && k.held < k.guarantee {
			return true
		}
	}
	return false
}

func (m *fairModel) first() string {
	best := ""
	for _, name := range m.order {
		k := m.keys[name]
		if len(k.limitLine) == 0 {
			continue
		}
		if best == "" {
			best = name
			continue
		}
		b := m.keys[best]
		ku, bu := k.held < k.guarantee, b.held < b.guarantee
		switch {
		case ku != bu:
			if ku {
				best = name
			}
		case m.tag(k) != m.tag(b):
			if m.tag(k) < m.tag(b) {
				best = name
			}
		case m.seq[k.limitLine[0]] < m.seq[b.limitLine[0]]:
			best = name
		}
	}
	return best
}

// tag is the start tag of k's next grant: the end of its last, but no
// earlier than a limit's worth of units before the virtual time now.
func (m *fairModel) tag(k *fairKey) int64 {
	return max(k.vfinish, m.vnow-m.limit*keyed.MaxWeight/k.weight)
}

func (m *fairModel) dispatch() {
	if m.broken {
		return
	}
	for {
		name := m.first()
		if name == "" {
			return
		}
		k := m.keys[name]
		c := k.limitLine[0]
		if c.n > m.free {
			return
		}
		if k.held < k.guarantee {
			// Another key below its guarantee is served: the bound, stated for a
			// key that is alone below its guarantee, no longer applies to the rest.
			for w := range m.bound {
				if w.key != name {
					delete(m.bound, w)
				}
			}
		}
		k.limitLine = k.limitLine[1:]
		tag := m.tag(k)
		m.vnow = max(m.vnow, tag)
		k.vfinish = tag + c.n*keyed.MaxWeight/k.weight // in whole steps, as the set counts
		m.free -= c.n
		k.held += c.n
		k.granted++
		c.state = "held"
		delete(m.bound, c)
	}
}

// settleKey grants the key's line what its free units allow; the granted go to
// the limit.
func (m *fairModel) settleKey(key string) {
	k := m.keys[key]
	for len(k.keyLine) > 0 && k.keyLine[0].n <= k.keyFree {
		c := k.keyLine[0]
		k.keyLine = k.keyLine[1:]
		k.keyFree -= c.n
		m.toLimit(c)
	}
}

func (m *fairModel) leave(c *modelCall, err error) {
	k := m.keys[c.key]
	switch c.state {
	case "key":
		k.keyLine = remove(k.keyLine, c)
	case "limit":
		k.limitLine = remove(k.limitLine, c)
		delete(m.bound, c)
		m.dispatch()
		k.keyFree += c.n
	}
	c.state, c.err = "failed", err
	m.settleKey(c.key)
}

func (m *fairModel) release(c *modelCall) {
	c.state = "released"
	k := m.keys[c.key]
	k.held -= c.n
	m.free += c.n
	m.freed += c.n
	m.dispatch()
	k.keyFree += c.n
	m.settleKey(c.key)
}

func (m *fairModel) resize(limit int64) {
	if m.broken {
		return
	}
	if limit < m.limit {
		for c := range m.bound {
			m.bound[c] += m.limit - limit // the units held above the new limit are paid back first
		}
	} else {
		m.freed += limit - m.limit
	}
	m.free += limit - m.limit
	m.limit = limit
	for _, name := range m.order {
		k := m.keys[name]
		var kept []*modelCall
		for _, c := range k.limitLine {
			if c.n > limit {
				c.state, c.err = "failed", semaphore.ErrTooLarge
				k.keyFree += c.n
				delete(m.bound, c)
				continue
			}
			kept = append(kept, c)
		}
		k.limitLine = kept
	}
	m.dispatch()
	for _, name := range m.order {
		m.settleKey(name)
	}
}

// active reports whether key has calls in progress or holders.
func (m *fairModel) active(key string) bool {
	for _, c := range m.calls {
		if c.key == key && (c.state == "key" || c.state == "limit" || c.state == "held") {
			return true
		}
	}
	return false
}

// FuzzSetLimitModel drives a set with a limit (WithLimit, WithWeightFunc,
// WithGuaranteeFunc) in a synctest bubble, as FuzzSetModel drives one with a
// global semaphore, with Resize added: keys "a" and "b" have no key-level limit
// to speak of (every request reaches the limit at once, in the order made) and
// ask for 0 to limit+1 units; key "c" has capacity 1 to 3 and asks for all of
// it (or one more), so that it reaches the limit one request at a time, its
// demand hidden at its own level in between. Calls are made with Acquire,
// AcquireInto and AcquireTimeout. After each step it checks every call's
// outcome, each key's Stats and the set's against the model, so that the limit
// is never exceeded, each key's calls are served in order, keys are served by
// their start tags (a key's credit bounded by a limit's worth), no unit is lost
// or counted twice; and that a key below its guarantee is served within the
// bound the package documentation states.
func FuzzSetLimitModel(f *testing.F) {
	f.Add([]byte{3, 7, 13, 2, 0, 0, 0, 1, 0, 4, 1, 5, 0, 6, 0, 0, 4, 1, 5, 0, 8, 9})
	f.Add([]byte{2, 0, 20, 1, 0, 3, 0, 4, 1, 3, 1, 4, 4, 0, 4, 1, 0, 7, 4, 2, 8, 4})
	f.Add([]byte{4, 19, 1, 2, 0, 0, 0, 0, 0, 1, 0, 1, 4, 0, 1, 4, 1, 1, 4, 1, 4, 2})
	f.Add([]byte{1, 2, 3, 2, 2, 5, 1, 0, 5, 1, 8, 2, 0, 7, 6, 0, 7, 0})
	f.Add([]byte{5, 9, 10, 11, 0, 3, 0, 4, 0, 5, 1, 2, 1, 3, 4, 0, 8, 1, 4, 3, 4, 0, 4, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) < 4 {
			return
		}
		limit := int64(ops[0] % 6)
		m := &fairModel{limit: limit, free: limit, keys: map[string]*fairKey{}, order: []string{"a", "b", "c"},
			seq: map[*modelCall]int{}, bound: map[*modelCall]int64{}}
		for i, name := range m.order {
			b := ops[1+i]
			k := &fairKey{capacity: 100, weight: 1 + int64(b%4), guarantee: int64(b/4) % 4, stale: true}
			if name == "c" {
				k.capacity = 1 + int64(b/16)%3
			}
			k.guarantee = min(k.guarantee, k.capacity)
			k.keyFree = k.capacity
			m.keys[name] = k
		}
		ops = ops[4:]
		if len(ops) > 80 {
			ops = ops[:80]
		}
		synctest.Test(t, func(t *testing.T) {
			runLimitModel(t, m, ops)
		})
	})
}

func runLimitModel(t *testing.T, m *fairModel, ops []byte) {
	m.now = time.Now() // the bubble's clock
	param := func(f func(*fairKey) int64) func(string) int64 {
		return func(key string) int64 { return f(m.keys[key]) }
	}
	s := keyed.New(0, keyed.WithLimit(m.limit),
		keyed.WithCapacityFunc(param(func(k *fairKey) int64 { return k.capacity })),
		keyed.WithWeightFunc(param(func(k *fairKey) int64 { return k.weight })),
		keyed.WithGuaranteeFunc(param(func(k *fairKey) int64 { return k.guarantee })))
	brokenBy := errors.New("model break")

	start := func(c *modelCall, timed bool) { c.start(s, timed, m.now) }
	enqueue := func(c *modelCall) {
		m.calls = append(m.calls, c)
		k := m.keys[c.key]
		switch {
		case m.broken:
			c.state, c.err = "failed", semaphore.ErrBroken
		case c.n > k.capacity:
			c.state, c.err = "failed", semaphore.ErrTooLarge
		case len(k.keyLine) == 0 && c.n <= k.keyFree:
			k.keyFree -= c.n
			m.toLimit(c)
		default:
			c.state = "key"
			k.keyLine = append(k.keyLine, c)
		}
	}
	wasActive := map[string]bool{}
	check := func(step int) {
		synctest.Wait()
		for _, c := range m.calls {
			if c.done == nil {
				continue
			}
			select {
			case r := <-c.done:
				c.done = nil
				c.units = r.u
				switch c.state {
				case "held":
					require.NoError(t, r.err, "step %d: call %d (%s, %d units) should be granted", step, c.id, c.key, c.n)
				case "failed":
					require.ErrorIs(t, r.err, c.err, "step %d: call %d (%s, %d units)", step, c.id, c.key, c.n)
					require.Zero(t, r.u.Count(), "step %d: a failed call holds nothing", step)
				default:
					require.Failf(t, "returned while the model has it waiting", "step %d: call %d (%s, %d units) is at %s; got %v", step, c.id, c.key, c.n, c.state, r.err)
				}
			default:
				require.Contains(t, []string{"key", "limit"}, c.state, "step %d: call %d (%s, %d units) has not returned", step, c.id, c.key, c.n)
			}
		}
		var total, weights int64
		for _, name := range m.order {
			if m.active(name) {
				weights += m.keys[name].weight
			}
		}
		for _, name := range m.order {
			k := m.keys[name]
			active := m.active(name)
			if !active && wasActive[name] {
				k.granted = 0  // counted anew when the key becomes active again
				k.stale = true // and owes nothing: it starts at the virtual time when it next waits
			}
			wasActive[name] = active
			waiting := len(k.keyLine) + len(k.limitLine)
			want := keyed.KeyStats{Key: name, Capacity: k.capacity, Held: k.held, Waiters: waiting,
				Weight: k.weight, Guarantee: k.guarantee, Acquired: k.granted}
			w := weights
			if !active {
				w += k.weight
			}
			if w > 0 {
				want.Share = min(max(m.limit*k.weight/w, k.guarantee), k.capacity)
			}
			if active {
				want.Borrowed = max(k.held-want.Share, 0)
			}
			require.Equal(t, want, s.KeyStats(name), "step %d", step)
			total += k.held
		}
		st := s.Stats()
		require.Equal(t, total, st.Held, "step %d: units held", step)
		require.Equal(t, m.limit, st.Limit, "step %d", step)
		require.Equal(t, m.limit-total, m.free, "step %d: no unit lost or counted twice", step)
		for c, by := range m.bound {
			if m.otherOwing(c.key) {
				delete(m.bound, c) // another key below its guarantee competes: no bound
				continue
			}
			require.Less(t, m.freed, by, "step %d: call %d (%s, %d units) below its key's guarantee is still waiting", step, c.id, c.key, c.n)
		}
	}

	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i]%9, ops[i+1]
		key := m.order[arg%3]
		k := m.keys[key]
		n := int64(arg/3) % (m.limit + 2)
		if key == "c" {
			n = k.capacity
			if arg/3%5 == 4 {
				n++ // too large for the key
			}
		}
		c := &modelCall{id: len(m.calls), key: key, n: n}
		switch op {
		case 0, 1: // Acquire; with op 1, AcquireInto
			c.into = op == 1
			enqueue(c)
			start(c, false)
		case 2:
			c.deadline = m.now.Add(time.Duration(1+arg%4)*time.Second + time.Duration(c.id+1)*time.Millisecond)
			enqueue(c)
			start(c, true)
		case 3:
			ok := !m.broken && n <= k.capacity && len(k.keyLine) == 0 && n <= k.keyFree &&
				!m.waitingAtLimit() && n <= m.free
			u, got := s.TryAcquire(key, n)
			require.Equal(t, ok, got, "step %d: TryAcquire(%s, %d)", i, key, n)
			if ok {
				k.keyFree -= n
				m.free -= n
				k.held += n
				k.granted++
				c.state, c.units = "held", u
				m.calls = append(m.calls, c)
			}
		case 4, 7:
			if op == 7 && arg%4 == 0 {
				s.Break(brokenBy)
				m.broken = true
				for _, w := range m.calls {
					if w.state == "key" || w.state == "limit" {
						w.state, w.err = "failed", semaphore.ErrBroken
					}
				}
				for _, k := range m.keys {
					k.keyLine, k.limitLine = nil, nil
				}
				clear(m.bound)
				break
			}
			var held []*modelCall
			for _, h := range m.calls {
				if h.state == "held" && h.done == nil {
					held = append(held, h)
				}
			}
			if len(held) == 0 {
				break
			}
			h := held[int(arg)%len(held)]
			h.units.Release()
			if m.broken {
				h.state = "released"
				m.keys[h.key].held -= h.n
				m.free += h.n
			} else {
				m.release(h)
			}
		case 5:
			var waiting []*modelCall
			for _, w := range m.calls {
				if (w.state == "key" || w.state == "limit") && w.cancel != nil {
					waiting = append(waiting, w)
				}
			}
			if len(waiting) == 0 {
				break
			}
			w := waiting[int(arg)%len(waiting)]
			w.cancel()
			synctest.Wait()
			m.leave(w, context.Canceled)
		case 6:
			end := m.now.Add(time.Duration(1+arg%3) * time.Second)
			for {
				var next *modelCall
				for _, w := range m.calls {
					if (w.state == "key" || w.state == "limit") && !w.deadline.IsZero() && !w.deadline.After(end) &&
						(next == nil || w.deadline.Before(next.deadline)) {
						next = w
					}
				}
				if next == nil {
					break
				}
				m.now = next.deadline
				m.leave(next, semaphore.ErrTimedOut)
			}
			time.Sleep(time.Until(end))
			m.now = end
		case 8:
			limit := int64(arg % 6)
			s.Resize(limit)
			m.resize(limit)
		}
		check(i)
	}

	for _, w := range m.calls {
		if w.cancel != nil {
			w.cancel()
		}
	}
	time.Sleep(10 * time.Second)
	synctest.Wait()
	for _, c := range m.calls {
		if c.done != nil {
			r := <-c.done
			c.units = r.u
		}
		c.units.Release()
	}
	require.Equal(t, 0, s.Stats().Keys, "no key is left in the map")
	require.NoError(t, s.Drain(context.Background()))
	if !m.broken {
		u, ok := s.TryAcquire("a", m.limit)
		require.True(t, ok, "every unit of the limit came back")
		u.Release()
	}
}
