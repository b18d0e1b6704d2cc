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

// A modelCall is one acquisition, in the set and in the model.
type modelCall struct {
	id       int
	key      string
	n        int64
	deadline time.Time // zero: no deadline (Acquire with a context)
	cancel   context.CancelFunc
	done     chan result // the goroutine's result
	units    *keyed.Units
	into     bool // acquired with AcquireInto, into a Units reused from an earlier call

	// The model's view.
	state string // "key" (waiting for the key), "global" (waiting for the global units), "held", "released", "failed"
	err   error  // the sentinel or context error the model expects, when failed
}

// twoLevelModel is the sequential model of a set: per key a FIFO line of
// requests over the key's capacity, then one FIFO line over the global capacity
// that a request joins, at its tail, when its key grants it.
type twoLevelModel struct {
	keyFree  map[string]int64
	keyLine  map[string][]*modelCall
	global   bool
	gCap     int64
	gFree    int64
	gLine    []*modelCall
	broken   bool
	calls    []*modelCall
	now      time.Time
	capacity map[string]int64
	granted  map[string]uint64 // calls granted per key since it became active
	total    uint64            // calls granted
}

// held moves c to held, and counts its grant.
func (m *twoLevelModel) held(c *modelCall) {
	c.state = "held"
	m.granted[c.key]++
	m.total++
}

func (m *twoLevelModel) fail(c *modelCall, err error) {
	c.state, c.err = "failed", err
}

// settle grants what the lines allow, in the order the set does it: the global
// line first (the units a step frees there are granted by that step's Release,
// before its key's units come back), then each key's line, whose granted heads
// join the global line at its tail, then the global line again.
func (m *twoLevelModel) settle(keysFirst []string) {
	if m.broken {
		return
	}
	m.grantGlobal()
	for _, k := range keysFirst {
		for len(m.keyLine[k]) > 0 && m.keyLine[k][0].n <= m.keyFree[k] {
			c := m.keyLine[k][0]
			m.keyLine[k] = m.keyLine[k][1:]
			m.keyFree[k] -= c.n
			m.toGlobal(c)
		}
	}
	m.grantGlobal()
}

func (m *twoLevelModel) toGlobal(c *modelCall) {
	if !m.global {
		m.held(c)
		return
	}
	if c.n > m.gCap { // larger than the global capacity: refused at once
		m.keyFree[c.key] += c.n
		m.fail(c, semaphore.ErrTooLarge)
		return
	}
	c.state = "global"
	m.gLine = append(m.gLine, c)
	m.grantGlobal()
}

func (m *twoLevelModel) grantGlobal() {
	for len(m.gLine) > 0 && m.gLine[0].n <= m.gFree {
		c := m.gLine[0]
		m.gLine = m.gLine[1:]
		m.gFree -= c.n
		m.held(c)
	}
}

// leave takes a waiting call out of its line with err, giving back its key's
// units if it held them, and grants what that allows.
func (m *twoLevelModel) leave(c *modelCall, err error) {
	switch c.state {
	case "key":
		m.keyLine[c.key] = remove(m.keyLine[c.key], c)
	case "global":
		m.gLine = remove(m.gLine, c)
		m.grantGlobal() // the global line moves on first; the key's units come back after
		m.keyFree[c.key] += c.n
	}
	m.fail(c, err)
	m.settle([]string{c.key})
}

func (m *twoLevelModel) release(c *modelCall) {
	c.state = "released"
	if m.global {
		m.gFree += c.n
		m.grantGlobal()
	}
	m.keyFree[c.key] += c.n
	m.settle([]string{c.key})
}

func remove(line []*modelCall, c *modelCall) []*modelCall {
	for i, x := range line {
		if x == c {
			return append(line[:i:i], line[i+1:]...)
		}
	}
	panic("not in line")
}

// FuzzSetModel drives a Set in a synctest bubble with Acquire and AcquireInto
// (cancellable; AcquireInto into Units released by earlier calls),
// AcquireTimeout (each with a deadline at its own instant), TryAcquire, releases,
// cancellations, the passing of time and Break, over three keys of capacities 1
// to 3 and an optional global semaphore of capacity 1 to 4. With a global
// semaphore every request asks for its key's whole capacity (or one more, which
// is too large), so a key grants one request at a time and the order in which
// granted requests reach the global line is that of the model (requests a key
// grants together would race to the global line). Without one, requests have
// any weight from 0 to one more than the key's capacity. After each step, once
// every goroutine is blocked, it checks that each call's outcome, each key's
// held units, waiters and calls granted since it became active, the set's
// calls granted, and the global semaphore's availability and waiters are the
// model's; at the end, that everything came back and no key is left.
func FuzzSetModel(f *testing.F) {
	f.Add([]byte{2, 1, 2, 3, 0, 0, 0, 1, 0, 2, 1, 4, 0, 6, 0, 0, 4, 1, 5, 0})
	f.Add([]byte{3, 3, 2, 1, 2, 0, 2, 1, 2, 2, 0, 0, 6, 1, 4, 0, 6, 2, 7, 0})
	f.Add([]byte{0, 1, 1, 1, 0, 0, 0, 0, 0, 3, 5, 1, 3, 2, 4, 0, 4, 0})
	f.Add([]byte{1, 2, 3, 2, 0, 5, 1, 0, 0, 1, 2, 1, 7, 4, 4, 1})
	f.Add([]byte{0, 2, 1, 2, 0, 6, 0, 3, 0, 9, 2, 12, 4, 0, 5, 1, 6, 2, 4, 1, 0, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) < 4 {
			return
		}
		gCap := int64(ops[0] % 5) // 0: no global semaphore
		caps := map[string]int64{"a": int64(ops[1]%3) + 1, "b": int64(ops[2]%3) + 1, "c": int64(ops[3]%3) + 1}
		ops = ops[4:]
		if len(ops) > 80 {
			ops = ops[:80]
		}
		synctest.Test(t, func(t *testing.T) {
			runSetModel(t, gCap, caps, ops)
		})
	})
}

func runSetModel(t *testing.T, gCap int64, caps map[string]int64, ops []byte) {
	opts := []keyed.Option{keyed.WithCapacityFunc(func(k string) int64 { return caps[k] })}
	var g *semaphore.Semaphore
	if gCap > 0 {
		g = semaphore.New(gCap)
		opts = append(opts, keyed.WithGlobal(g))
	}
	s := keyed.New(0, opts...)
	m := &twoLevelModel{
		keyFree: map[string]int64{}, keyLine: map[string][]*modelCall{},
		global: g != nil, gCap: gCap, gFree: gCap, now: time.Now(), capacity: caps,
		granted: map[string]uint64{},
	}
	var spare []*keyed.Units // released Units, for AcquireInto to fill again
	for k, c := range caps {
		m.keyFree[k] = c
	}
	keys := []string{"a", "b", "c"}
	brokenBy := errors.New("model break")

	start := func(c *modelCall, timed bool) {
		if c.into && len(spare) > 0 {
			c.units, spare = spare[len(spare)-1], spare[:len(spare)-1]
		}
		c.start(s, timed, m.now)
	}
	// enqueue puts a new call in the model as the set sees it arrive.
	enqueue := func(c *modelCall) {
		m.calls = append(m.calls, c)
		switch {
		case m.broken:
			m.fail(c, semaphore.ErrBroken)
		case c.n > caps[c.key]:
			m.fail(c, semaphore.ErrTooLarge)
		case len(m.keyLine[c.key]) == 0 && c.n <= m.keyFree[c.key]:
			m.keyFree[c.key] -= c.n
			m.toGlobal(c)
		default:
			c.state = "key"
			m.keyLine[c.key] = append(m.keyLine[c.key], c)
		}
	}
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
					require.Equal(t, c.n, c.units.Count(), "step %d: call %d", step, c.id)
					require.Equal(t, c.key, c.units.Key(), "step %d: call %d", step, c.id)
				case "failed":
					require.ErrorIs(t, r.err, c.err, "step %d: call %d (%s, %d units)", step, c.id, c.key, c.n)
					if c.into {
						require.Zero(t, r.u.Count(), "a failed AcquireInto leaves its Units holding nothing")
						spare = append(spare, r.u)
					} else {
						require.Nil(t, r.u)
					}
				default:
					require.Failf(t, "returned while the model has it waiting", "step %d: call %d (%s, %d units) is at %s; got %v", step, c.id, c.key, c.n, c.state, r.err)
				}
			default:
				require.Contains(t, []string{"key", "global"}, c.state, "step %d: call %d (%s, %d units) has not returned", step, c.id, c.key, c.n)
			}
		}
		for _, k := range keys {
			var held int64
			waiting := len(m.keyLine[k])
			for _, c := range m.calls {
				if c.key == k && c.state == "held" {
					held += c.n
				}
				if c.key == k && c.state == "global" {
					waiting++
				}
			}
			active := waiting > 0
			for _, c := range m.calls {
				active = active || c.key == k && c.state == "held"
			}
			if !active {
				m.granted[k] = 0 // counted anew when the key becomes active again
			}
			require.Equal(t, keyed.KeyStats{Key: k, Capacity: caps[k], Held: held, Waiters: waiting, Acquired: m.granted[k]},
				s.KeyStats(k), "step %d", step)
		}
		require.Equal(t, m.total, s.Stats().Acquired, "step %d: calls granted", step)
		if g != nil && !m.broken {
			require.Equal(t, m.gFree, g.Available(), "step %d: global units free", step)
			require.Equal(t, len(m.gLine), g.Waiters(), "step %d: global waiters", step)
		}
	}

	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i]%8, ops[i+1]
		key := keys[arg%3]
		n := caps[key]
		switch {
		case g == nil:
			n = int64(arg/3) % (caps[key] + 2) // any weight, up to one too large
		case arg/3%5 == 4:
			n++ // too large for the key
		}
		c := &modelCall{id: len(m.calls), key: key, n: n}
		switch op {
		case 0, 1: // Acquire with a context; with op 1, AcquireInto
			c.into = op == 1
			enqueue(c)
			start(c, false)
		case 2: // AcquireTimeout, with a deadline at an instant of its own
			c.deadline = m.now.Add(time.Duration(1+arg%4)*time.Second + time.Duration(c.id+1)*time.Millisecond)
			enqueue(c)
			start(c, true)
		case 3: // TryAcquire
			ok := !m.broken && n <= caps[key] && len(m.keyLine[key]) == 0 && n <= m.keyFree[key] &&
				(!m.global || (len(m.gLine) == 0 && n <= m.gFree))
			u, got := s.TryAcquire(key, n)
			require.Equal(t, ok, got, "step %d: TryAcquire(%s, %d)", i, key, n)
			if ok {
				m.keyFree[key] -= n
				if m.global {
					m.gFree -= n
				}
				c.units = u
				m.held(c)
				m.calls = append(m.calls, c)
			}
		case 4, 7: // release a holder; op 7 with a small arg breaks the set instead
			if op == 7 && arg%4 == 0 {
				s.Break(brokenBy)
				m.broken = true
				for _, w := range m.calls {
					if w.state == "key" || w.state == "global" {
						m.fail(w, semaphore.ErrBroken)
					}
				}
				m.keyLine, m.gLine = map[string][]*modelCall{}, nil
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
			if h.into {
				spare = append(spare, h.units)
			}
			if m.broken {
				h.state = "released"
			} else {
				m.release(h)
			}
		case 5: // cancel a waiting Acquire
			var waiting []*modelCall
			for _, w := range m.calls {
				if (w.state == "key" || w.state == "global") && w.cancel != nil {
					waiting = append(waiting, w)
				}
			}
			if len(waiting) == 0 {
				break
			}
			w := waiting[int(arg)%len(waiting)]
			w.cancel()
			synctest.Wait() // the one cancellation, settled before anything else happens
			m.leave(w, context.Canceled)
		case 6: // let time pass: deadlines expire one instant at a time
			end := m.now.Add(time.Duration(1+arg%3) * time.Second)
			for {
				var next *modelCall
				for _, w := range m.calls {
					if (w.state == "key" || w.state == "global") && !w.deadline.IsZero() && !w.deadline.After(end) &&
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
		}
		check(i)
	}

	// Everything comes back: cancel the waiters, release the holders.
	for _, w := range m.calls {
		if w.cancel != nil {
			w.cancel()
		}
	}
	time.Sleep(10 * time.Second) // every AcquireTimeout expires
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
	if g != nil && !m.broken {
		require.Equal(t, gCap, g.Available())
	}
}

// start makes c's call on s on a goroutine of its own: AcquireTimeout until
// c.deadline when timed, else Acquire with a context c.cancel ends. Its result
// arrives on c.done.
func (c *modelCall) start(s *keyed.Set, timed bool, now time.Time) {
	c.done = make(chan result, 1)
	var ctx context.Context = context.Background()
	if !timed {
		ctx, c.cancel = context.WithCancel(context.Background())
	}
	d := c.deadline.Sub(now)
	into := c.units
	if c.into && into == nil {
		into = new(keyed.Units)
	}
	go func() {
		var u *keyed.Units
		var err error
		switch {
		case timed:
			u, err = s.AcquireTimeout(d, c.key, c.n)
		case c.into:
			u, err = into, s.AcquireInto(ctx, into, c.key, c.n)
		default:
			u, err = s.Acquire(ctx, c.key, c.n)
		}
		c.done <- result{u, err}
	}()
}
