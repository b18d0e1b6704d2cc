package adaptive_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/internal/fuzzprog"
)

// ruleCall is one call, in the Limiter and in the model.
type ruleCall struct {
	level    adaptive.Priority
	units    int64
	arrival  time.Time
	deadline time.Time // zero: none
	bound    time.Time // model: when its wait ends unless granted; zero: never
	timedOut bool      // model: the bound is its context's own deadline (nothing measured yet): it times out, it is not shed
	cancel   context.CancelFunc

	// Set by the goroutine of the call.
	done chan struct{}
	c    *adaptive.Call
	err  error

	// Model.
	state     string // "waiting", "held", "ended", "refused"
	want      string // for "refused": "shed", "shed at once", "timed out", "cancelled", "too large"
	grantedAt time.Time
}

// ruleModel is the sequential model of a Limiter's door: the deadline rule,
// the standing-queue drain and the levels, over a FIFO gate. It restates the
// rule of the package documentation, independently of the code.
type ruleModel struct {
	limit     int64
	rtt       time.Duration // the last window's mean round trip; 0 before
	lastEmpty time.Time     // when a caller last found the queue empty
	lastShed  time.Time     // when a sheddable call was last shed; zero never
	always    bool          // WithStandingQueue
	floor     float64       // the sheddable level's floor
	calls     []*ruleCall   // every call, in arrival order
	stats     adaptive.Stats
}

const (
	ruleTarget   = 5 * time.Millisecond
	ruleInterval = 100 * time.Millisecond
)

func (m *ruleModel) held() (n int64) {
	for _, c := range m.calls {
		if c.state == "held" {
			n += c.units
		}
	}
	return n
}

func (m *ruleModel) queue() []*ruleCall {
	var q []*ruleCall
	for _, c := range m.calls {
		if c.state == "waiting" {
			q = append(q, c)
		}
	}
	return q
}

func (m *ruleModel) shed(c *ruleCall, now time.Time, atOnce bool) {
	lv := &m.stats.Levels[c.level]
	lv.Shed++
	if atOnce {
		lv.ShedAtOnce++
	}
	if c.level == adaptive.Sheddable {
		m.lastShed = now
	}
}

// arrive predicts what happens to c, arriving at now: granted at once,
// refused at once (want), or queued until its bound.
func (m *ruleModel) arrive(c *ruleCall, now time.Time) {
	if m.rtt > 0 && !c.deadline.IsZero() && c.deadline.Sub(now) < m.rtt {
		c.state, c.want = "refused", "shed at once"
		m.shed(c, now, true)
		return
	}
	q := m.queue()
	if len(q) == 0 && c.units <= m.limit-m.held() {
		m.grant(c, now)
		if now.Sub(m.lastEmpty) > ruleInterval/16 {
			m.lastEmpty = now
		}
		return
	}
	if c.units > m.limit {
		c.state, c.want = "refused", "too large"
		return
	}
	if len(q) == 0 {
		m.lastEmpty = now
	}
	wait, why := time.Duration(1<<63-1), "none"
	if !c.deadline.IsZero() {
		wait, why = c.deadline.Sub(now)-m.rtt, "deadline"
	}
	var use, ahead int64
	for _, w := range q {
		ahead += w.units
		if w.level == c.level {
			use += w.units
		}
	}
	for _, h := range m.calls {
		if h.state == "held" && h.level == c.level {
			use += h.units
		}
	}
	standing := now.Sub(m.lastEmpty) > ruleInterval
	shedding := !m.lastShed.IsZero() && now.Sub(m.lastShed) <= ruleInterval
	exempt := c.level == adaptive.Sheddable && m.floor > 0 && float64(use+c.units) <= m.floor*float64(m.limit)
	lvCap := time.Duration(1<<63 - 1)
	switch {
	case exempt:
	case c.level == adaptive.Sheddable:
		lvCap = ruleTarget
	case c.level == adaptive.Default && shedding:
		lvCap = 2 * ruleTarget
	case c.level == adaptive.Default && standing && (m.always || !c.deadline.IsZero()):
		lvCap = ruleTarget
	}
	if lvCap < wait {
		wait, why = lvCap, "level"
	}
	if why != "none" && wait <= 0 {
		c.state, c.want = "refused", "shed at once"
		m.shed(c, now, true)
		return
	}
	if m.rtt > 0 && why != "none" {
		held := m.held()
		avail := max(m.limit-held, 0)
		need := max(ahead+c.units-avail, held+ahead+c.units-m.limit)
		var w time.Duration
		if need > 0 {
			w = time.Duration(float64(need) / float64(max(held, m.limit, 1)) * float64(m.rtt))
		}
		if w > wait {
			c.state, c.want = "refused", "shed at once"
			m.shed(c, now, true)
			return
		}
	}
	c.state = "waiting"
	if why != "none" {
		c.bound = now.Add(wait)
		c.timedOut = why == "deadline" && m.rtt == 0
	}
}

// grant gives c its units at now, or, granted too late, hands them on.
func (m *ruleModel) grant(c *ruleCall, now time.Time) {
	late := m.rtt > 0 && !c.deadline.IsZero() && c.deadline.Sub(now) < m.rtt
	if !late && m.always && c.level == adaptive.Default && now.Sub(c.arrival) > ruleTarget && now.Sub(m.lastEmpty) > ruleInterval {
		late = c.state == "waiting"
	}
	if late && c.state == "waiting" {
		c.state, c.want = "refused", "shed"
		m.shed(c, now, false)
		return
	}
	c.state, c.grantedAt = "held", now
	m.stats.Acquired++
	m.stats.Levels[c.level].Acquired++
}

// admit grants the queue's head while it fits, FIFO, at now.
func (m *ruleModel) admit(now time.Time) {
	for {
		q := m.queue()
		if len(q) == 0 || q[0].units > m.limit-m.held() {
			return
		}
		m.grant(q[0], now)
	}
}

// resize applies a new limit: waiters that no longer fit fail as too large.
func (m *ruleModel) resize(limit int64, now time.Time) {
	if limit != m.limit {
		if limit > m.limit {
			m.stats.Increases++
		} else {
			m.stats.Decreases++
		}
	}
	m.limit = limit
	for _, c := range m.queue() {
		if c.units > limit {
			c.state, c.want = "refused", "too large"
		}
	}
	m.admit(now)
}

// advance moves the model's clock to until: the waits whose bound passes end,
// earliest first, each letting the ones behind it in if it was the head.
func (m *ruleModel) advance(until time.Time) {
	for {
		var next *ruleCall
		for _, c := range m.queue() {
			if !c.bound.IsZero() && !c.bound.After(until) && (next == nil || c.bound.Before(next.bound)) {
				next = c
			}
		}
		if next == nil {
			return
		}
		if next.timedOut {
			next.state, next.want = "refused", "timed out"
		} else {
			next.state, next.want = "refused", "shed"
			m.shed(next, next.bound, false)
		}
		m.admit(next.bound)
	}
}

// FuzzDeadlineRuleModel drives a Limiter with the deadline rule on (its
// default), in a synctest bubble, with calls of every Priority, weights of one
// and two units, no deadline or deadlines from 2ms to 120ms, calls ending
// (each sampled one closing a window that sets the usual round trip and the
// next limit), waiting callers giving up, and time passing; the first byte
// chooses WithStandingQueue and a floor for the sheddable level. After each
// step it requires what ruleModel predicts: which calls are granted (at once,
// or later in FIFO order across levels), refused at once, shed after waiting
// or handed on, with which error, and every counter of Stats, per level.
func FuzzDeadlineRuleModel(f *testing.F) {
	f.Add([]byte{0, 0, 13, 0, 13, 0, 14, 0, 2, 3, 4, 1, 0, 1, 3, 1, 2})
	f.Add([]byte{1, 0, 1, 0, 1, 0, 4, 0, 25, 0, 26, 3, 2, 1, 0, 5, 0, 29, 3, 4})
	f.Add([]byte{2, 0, 18, 0, 18, 0, 18, 3, 3, 0, 24, 0, 14, 0, 26, 1, 1, 5, 3, 0})
	f.Add([]byte{6, 5, 6, 5, 9, 5, 0, 3, 4, 3, 4, 5, 2, 1, 0, 2, 4, 0, 3, 2})
	f.Fuzz(runRuleModel)
}

// runRuleModel runs one program of FuzzDeadlineRuleModel.
func runRuleModel(t *testing.T, prog []byte) {
	if len(prog) > 120 {
		prog = prog[:120]
	}
	r := fuzzprog.New(prog)
	cfg := r.Byte()
	synctest.Test(t, func(t *testing.T) {
		m := &ruleModel{limit: int64(2 + cfg/4%3), always: cfg&1 != 0, lastEmpty: time.Now()}
		alg := &script{limit: int(m.limit)}
		sem := semaphore.New(m.limit)
		opts := []adaptive.Option{adaptive.WithWindow(1, 0, 0)}
		if m.always {
			opts = append(opts, adaptive.WithStandingQueue(ruleTarget, ruleInterval))
		}
		if cfg&2 != 0 {
			m.floor = 0.5
			opts = append(opts, adaptive.WithFloor(adaptive.Sheddable, m.floor))
		}
		l := adaptive.New(sem, alg, opts...)
		m.stats.Limit = int(m.limit)
		levels := [...]adaptive.Priority{adaptive.Default, adaptive.Critical, adaptive.Sheddable}
		deadlines := [...]time.Duration{0, 2 * time.Millisecond, 8 * time.Millisecond, 30 * time.Millisecond, 120 * time.Millisecond}
		steps := [...]time.Duration{time.Millisecond, 4 * time.Millisecond, 11 * time.Millisecond, 57 * time.Millisecond, 150 * time.Millisecond}
		pick := func(state string, k byte) *ruleCall {
			var in []*ruleCall
			for _, c := range m.calls {
				if c.state == state {
					in = append(in, c)
				}
			}
			if len(in) == 0 {
				return nil
			}
			return in[int(k)%len(in)]
		}
		for step := 0; r.More(); step++ {
			now := time.Now()
			switch op := r.Byte() % 6; op {
			case 0, 5: // a call arrives
				b := r.Byte()
				c := &ruleCall{level: levels[b%3], units: 1 + int64(b/3%2), arrival: now, done: make(chan struct{})}
				if op == 5 {
					c.level = adaptive.Critical
				}
				ctx := adaptive.ContextWithPriority(context.Background(), c.level)
				if d := deadlines[b/6%5]; d > 0 {
					c.deadline = now.Add(d)
					ctx, c.cancel = context.WithDeadline(ctx, c.deadline)
				} else {
					ctx, c.cancel = context.WithCancel(ctx)
				}
				probe := *c
				save := *m
				m.calls = slices.Clone(m.calls)
				m.arrive(&probe, now)
				tie := false
				for _, w := range save.queue() {
					tie = tie || !probe.bound.IsZero() && probe.bound.Equal(w.bound)
				}
				*m = save
				if tie { // two waits ending at one instant end in either order: not a step the model decides
					c.cancel()
					continue
				}
				m.calls = append(m.calls, c)
				m.arrive(c, now)
				go func() {
					c.c, c.err = l.AcquireN(ctx, c.units)
					close(c.done)
				}()
			case 1: // a call ends with a sample, and the script's next limit
				c, b := pick("held", r.Byte()), r.Byte()
				if c == nil {
					continue
				}
				v, next := adaptive.Verdict(b%2), int64(1+b/2%5)
				alg.limits = []int{int(next)}
				c.c.Done(v)
				c.state = "ended"
				m.stats.Windows++
				if v == adaptive.Success {
					m.stats.Succeeded++
					m.rtt = max(now.Sub(c.grantedAt), 1)
				} else {
					m.stats.Dropped++
				}
				m.resize(next, now)
			case 2: // a call ends without a sample
				c := pick("held", r.Byte())
				if c == nil {
					continue
				}
				c.c.Release()
				c.state = "ended"
				m.stats.Ignored++
				m.admit(now)
			case 3: // time passes
				d := steps[r.Byte()%5]
				m.advance(now.Add(d))
				time.Sleep(d)
			case 4: // a waiting caller gives up
				c := pick("waiting", r.Byte())
				if c == nil {
					continue
				}
				c.cancel()
				c.state, c.want = "refused", "cancelled"
				m.admit(now)
			}
			synctest.Wait()
			check(t, step, l, sem, m)
		}
		for _, c := range m.calls {
			c.cancel()
		}
		synctest.Wait()
		for _, c := range m.calls {
			if c.c != nil {
				c.c.Release()
			}
		}
		require.Equal(t, sem.Capacity(), sem.Available(), "every unit came back")
	})
}

// check requires the Limiter to be where the model is after a step.
func check(t *testing.T, step int, l *adaptive.Limiter, sem *semaphore.Semaphore, m *ruleModel) {
	t.Helper()
	for i, c := range m.calls {
		closed := isClosed(c.done)
		require.Equal(t, c.state != "waiting", closed, "step %d: call %d (%v, %d units, deadline %v) is %s", step, i, c.level, c.units, c.deadline, c.state)
		if !closed {
			continue
		}
		if c.state == "refused" {
			require.Error(t, c.err, "step %d: call %d should be refused (%s)", step, i, c.want)
			o, _ := semaphore.OutcomeOf(c.err)
			switch c.want {
			case "shed", "shed at once":
				require.Equal(t, semaphore.Shed, o, "step %d: call %d: %v", step, i, c.err)
				require.ErrorIs(t, c.err, semaphore.ErrShed)
				require.Equal(t, c.want == "shed at once", containsAtOnce(c.err), "step %d: call %d: %v", step, i, c.err)
			case "timed out":
				require.Equal(t, semaphore.TimedOut, o, "step %d: call %d: %v", step, i, c.err)
			case "cancelled":
				require.True(t, errors.Is(c.err, context.Canceled), "step %d: call %d: %v", step, i, c.err)
			case "too large":
				require.ErrorIs(t, c.err, semaphore.ErrTooLarge, "step %d: call %d", step, i)
			}
		} else {
			require.NoError(t, c.err, "step %d: call %d (%v) should be granted", step, i, c.level)
		}
	}
	want := m.stats
	want.Limit, want.InFlight, want.Available = int(m.limit), int(m.held()), int(max(m.limit-m.held(), 0))
	for lv := range want.Levels {
		want.Levels[lv].InFlight, want.Levels[lv].Waiting = 0, 0
	}
	for _, c := range m.calls {
		switch c.state {
		case "held":
			want.Levels[c.level].InFlight += int(c.units)
		case "waiting":
			want.Levels[c.level].Waiting += int(c.units)
			want.Waiters++
		}
	}
	want.Shed, want.ShedAtOnce = 0, 0
	for _, lv := range want.Levels {
		want.Shed += lv.Shed
		want.ShedAtOnce += lv.ShedAtOnce
	}
	got := l.Stats()
	want.LastChange = got.LastChange
	require.Equal(t, want, got, "step %d", step)
	require.Equal(t, m.limit, sem.Capacity(), "step %d", step)
	require.Equal(t, max(m.limit-m.held(), 0), sem.Available(), "step %d", step)
}

func containsAtOnce(err error) bool {
	s := err.Error()
	for i := 0; i+len("shed at once") <= len(s); i++ {
		if s[i:i+len("shed at once")] == "shed at once" {
			return true
		}
	}
	return false
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
