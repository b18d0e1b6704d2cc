package amqpsem

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The history checker: an independent record of the semaphore from the
// broker's side, checked against what the clients believed.
//
// A recorder consumes the broker's queue.created and queue.deleted events
// (the event exchange, with the broker's timestamp in milliseconds) for the
// semaphore's A and B queues, on a connection of its own, from before the test
// acts until a flush at its end. The event exchange publishes every event from
// one event manager on the node, so they arrive in the order they happened;
// a flush queue created and deleted last is seen last.
//
// The clients' side is a grantLog: for each Units a test obtained, its slots,
// the time it was granted and the time it stopped using them (just before
// Release, or when Lost closed).
//
// check asserts, from the broker's record alone, that no slot's B queue was
// created twice without a deletion between (no slot held twice), allowing
// for the declare that loses a race for a name: RabbitMQ starts a queue
// process for each of two declares that arrive together, and the loser's
// reports created, then deleted, while its client gets RESOURCE_LOCKED; and,
// against the clients' log, that each
// client's use of a slot lies inside one lifetime of its B queue (created at
// or before the grant, within the event's lag, and after the previous lifetime
// ended; deleted at or after the use ended), that no two clients'
// uses of a slot overlap, and that the clients never used more slots at once
// than the bound.
type recorder struct {
	name string
	conn *amqp.Connection
	ch   *amqp.Channel
	done chan struct{}

	mu  sync.Mutex
	got []brokerEvent
}

type brokerEvent struct {
	ms      int64 // the broker's clock
	slot    int
	kind    byte // 'A' or 'B'
	created bool
	flush   bool
	seq     int // arrival order
}

// eventLag bounds how long after a queue's creation the broker stamps its
// queue.created event (see check).
const eventLag = 20 * time.Millisecond

// record starts a recorder of name's queues on url.
func record(t testing.TB, url, name string) *recorder {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	ch, err := conn.Channel()
	require.NoError(t, err)
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	require.NoError(t, err)
	for _, key := range []string{"queue.created", "queue.deleted"} {
		require.NoError(t, ch.QueueBind(q.Name, key, eventExchange, false, nil))
	}
	d, err := ch.Consume(q.Name, "", true, true, false, false, nil)
	require.NoError(t, err)
	r := &recorder{name: name, conn: conn, ch: ch, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		seq := 0
		for m := range d {
			qn, _ := m.Headers["name"].(string)
			ms, _ := m.Headers["timestamp_in_ms"].(int64)
			e := brokerEvent{ms: ms, created: m.RoutingKey == "queue.created", seq: seq}
			seq++
			switch {
			case qn == r.flushQueue():
				e.flush = true
			default:
				slot, kind, ok := slotOf(name, qn)
				if !ok {
					continue
				}
				e.slot, e.kind = slot, kind
			}
			r.mu.Lock()
			r.got = append(r.got, e)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-r.done
	})
	return r
}

func (r *recorder) flushQueue() string { return "amqpsem.test-flush." + r.name }

// flush waits until every event before now has been recorded.
func (r *recorder) flush(t testing.TB) []brokerEvent {
	t.Helper()
	ch, err := r.conn.Channel()
	require.NoError(t, err)
	defer ch.Close()
	_, err = ch.QueueDeclare(r.flushQueue(), false, false, true, false, nil)
	require.NoError(t, err)
	_, err = ch.QueueDelete(r.flushQueue(), false, false, false)
	require.NoError(t, err)
	var out []brokerEvent
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, e := range r.got {
			if e.flush && !e.created {
				out = append([]brokerEvent(nil), r.got[:i]...)
				return true
			}
		}
		return false
	}, 30*time.Second, 5*time.Millisecond, "the flush queue's deletion event")
	r.mu.Lock()
	r.got = nil
	r.mu.Unlock()
	var kept []brokerEvent
	for _, e := range out {
		if !e.flush {
			kept = append(kept, e)
		}
	}
	return kept
}

// A grantLog is the clients' side: every use of slots a test made.
type grantLog struct {
	mu   sync.Mutex
	uses []slotUse
}

type slotUse struct {
	slot       int
	from, to   time.Time // granted; stopped using (zero: still in use at the check)
	units      *Units
	lostBefore bool // to is when Lost closed
}

// add records u's slots as granted now.
func (l *grantLog) add(u *Units) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, sl := range u.Slots() {
		l.uses = append(l.uses, slotUse{slot: sl, from: now, units: u})
	}
}

// end records that u's slots stop being used now: call it just before Release.
func (l *grantLog) end(u *Units) { l.endAt(u, time.Now(), false) }

// lost records that u's slots stopped being used when Lost closed, at.
func (l *grantLog) lost(u *Units, at time.Time) { l.endAt(u, at, true) }

func (l *grantLog) endAt(u *Units, at time.Time, lost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.uses {
		if l.uses[i].units == u && l.uses[i].to.IsZero() {
			l.uses[i].to, l.uses[i].lostBefore = at, lost
		}
	}
}

// release is end then Release.
func (l *grantLog) release(t testing.TB, ctx context.Context, u *Units) {
	t.Helper()
	l.end(u)
	require.NoError(t, u.Release(ctx))
}

// check flushes the recorder and checks its record and the log (see recorder)
// with bound the most slots the clients may use at once. It returns the number
// of B queue lifetimes (grants by the broker).
func check(t testing.TB, r *recorder, l *grantLog, bound int) int {
	t.Helper()
	events := r.flush(t)
	sort.SliceStable(events, func(i, j int) bool { return events[i].seq < events[j].seq })
	type life struct{ from, to int64 } // to: -1 while alive
	lives := map[int][]life{}
	losers := map[int]int{} // queue processes of declares that lost a race, not yet deleted
	var grants, lost int
	for _, e := range events {
		switch {
		case e.kind == 'A':
			continue
		case e.created:
			ls := lives[e.slot]
			if n := len(ls); n > 0 && ls[n-1].to < 0 {
				// A declare that lost a race to the live queue's: the broker
				// started a queue process for it, which reports created, then
				// deleted when it found the name taken (the client got
				// RESOURCE_LOCKED). Its deletion is the next one of the slot.
				losers[e.slot]++
				lost++
				continue
			}
			lives[e.slot] = append(ls, life{from: e.ms, to: -1})
			grants++
		default:
			if losers[e.slot] > 0 {
				losers[e.slot]--
				continue
			}
			ls := lives[e.slot]
			if n := len(ls); n == 0 || ls[n-1].to >= 0 {
				// Deleted without a creation seen: created before the recorder
				// started, or a no-op deletion (a release of a queue already gone).
				continue
			}
			ls[len(ls)-1].to = e.ms
		}
	}
	for slot, n := range losers {
		if n > 0 {
			t.Errorf("slot %d: %d B queues created while another lived and never deleted: the slot is held twice", slot, n)
		}
	}
	if lost > 0 {
		t.Logf("%d declares lost a race for a live B queue (RESOURCE_LOCKED)", lost)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Each client use lies inside one lifetime of its slot's B queue, and after
	// the lifetime before it. The broker's timestamps are those of its event
	// manager, which stamps a queue.created event as it emits it: it may come
	// a few milliseconds after the declare-ok the client acted on (2 ms seen on
	// a loaded machine). So a use may start up to eventLag before its
	// lifetime's creation, never before the previous lifetime's end.
	for _, u := range l.uses {
		from, to := u.from.UnixMilli(), u.to.UnixMilli()
		found := false
		for i, lf := range lives[u.slot] {
			after := i == 0 || lives[u.slot][i-1].to <= from
			if after && lf.from-eventLag.Milliseconds() <= from && (lf.to < 0 || u.to.IsZero() || to <= lf.to) && (lf.to < 0 || from <= lf.to) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("slot %d used from %d to %d (lost %v) outside every lifetime of its B queue: %v", u.slot, from, to, u.lostBefore, lives[u.slot])
		}
	}
	// No two uses of a slot overlap; the uses never exceed the bound.
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	bySlot := map[int][]slotUse{}
	for _, u := range l.uses {
		bySlot[u.slot] = append(bySlot[u.slot], u)
		edges = append(edges, edge{u.from, 1})
		if !u.to.IsZero() {
			edges = append(edges, edge{u.to, -1})
		}
	}
	for slot, us := range bySlot {
		sort.Slice(us, func(i, j int) bool { return us[i].from.Before(us[j].from) })
		for i := 1; i < len(us); i++ {
			if us[i-1].to.IsZero() || us[i].from.Before(us[i-1].to) {
				t.Errorf("slot %d used by two clients at once: from %v to %v and from %v", slot, us[i-1].from, us[i-1].to, us[i].from)
			}
		}
	}
	sort.SliceStable(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta
		}
		return edges[i].at.Before(edges[j].at)
	})
	inUse, peak := 0, 0
	for _, e := range edges {
		inUse += e.delta
		peak = max(peak, inUse)
	}
	assert.LessOrEqual(t, peak, bound, "slots used at once")
	if t.Failed() {
		t.Logf("broker lifetimes: %v", lives)
	}
	return grants
}
