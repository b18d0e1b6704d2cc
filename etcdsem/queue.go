package etcdsem

import (
	"fmt"
	"github.com/fairsem/semaphore"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// queue is a handle's mirror of the semaphore's keys, kept by its watch, and the
// grant rule applied to it at every revision (see doc.go for the argument).
//
// The rule, evaluated after all events of a revision are applied, walking the
// keys in create-revision order with a running sum of the weights of the keys
// that count (every key except dead ones):
//   - a waiting key dies if the semaphore is broken (ErrBroken) or its weight
//     exceeds the capacity (ErrTooLarge); a dead key no longer counts;
//   - otherwise it is granted if the sum including it is at most the capacity.
//
// Granted, dead and unknown are final until the key is deleted. Keys present
// when the handle started are unknown if they did not fit then (they may be
// holders from before a shrinking Resize): they count and never die, which can
// only make this handle's own keys wait longer than the rule requires, never
// shorter. Keys created later are tracked exactly, from their first revision.
//
// All fields are guarded by handle.mu.
type queue struct {
	h        *handle
	rev      int64         // the last revision fully applied
	advanced chan struct{} // closed and replaced whenever rev moves
	keys     []*qkey       // in create-revision order
	byKey    map[string]*qkey
	capacity int64
	capRev   int64 // mod revision of the cap key; 0 while absent
	broken   bool
	reason   string // the broken key's value
}

type keyState uint8

const (
	keyWaiting keyState = iota
	keyGranted
	keyDead
	keyUnknown // present at load and not fitting then: counts, never dies
)

// qkey is one queue key: one acquire, waiting or holding.
type qkey struct {
	key       string
	createRev int64 // the fencing token; orders the queue
	n         int64 // the weight; a holder's may drop (Return), a waiter's never changes
	lease     int64
	created   time.Time // the writer's clock, for Stats
	client    string    // the writer's label, for Stats
	state     keyState
	grantRev  int64             // revision at which it was granted (keyGranted)
	dead      error             // why it died (keyDead)
	deadAs    semaphore.Outcome // how its acquire ended: Broken or TooLarge (keyDead)
}

func (q *queue) init(h *handle) {
	q.h = h
	q.advanced = make(chan struct{})
	q.byKey = make(map[string]*qkey)
	if h.capFixed {
		q.capacity = h.capacity
	}
}

// load sets the mirror from a read of every key at rev.
func (q *queue) load(rev int64, kvs []*mvccpb.KeyValue) {
	for _, kv := range kvs {
		q.put(kv)
	}
	var sum int64
	for _, k := range q.keys {
		sum = addSat(sum, k.n)
		if sum <= q.capacity && !q.broken {
			k.state, k.grantRev = keyGranted, rev
		} else {
			k.state = keyUnknown
		}
	}
	q.advance(rev)
}

// applyEvents applies watched events, settling the rule at each revision
// boundary: a grant is decided on whole revisions only, as the checker replays.
func (q *queue) applyEvents(evs []*clientv3.Event) {
	for i, ev := range evs {
		if ev.Kv.ModRevision <= q.rev {
			continue // already applied (a re-watch overlapping a resync)
		}
		if ev.Type == mvccpb.DELETE {
			q.delete(string(ev.Kv.Key))
		} else {
			q.put(ev.Kv)
		}
		if i == len(evs)-1 || evs[i+1].Kv.ModRevision != ev.Kv.ModRevision {
			q.settle(ev.Kv.ModRevision)
		}
	}
}

// put applies a put of any key of the semaphore.
func (q *queue) put(kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	switch {
	case key == q.h.capKey && !q.h.capFixed:
		c, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil || c < 0 {
			c = 0 // a malformed capacity grants nothing
		}
		q.capacity, q.capRev = c, kv.ModRevision
	case key == q.h.brokenKey:
		q.broken, q.reason = true, string(kv.Value)
	case strings.HasPrefix(key, q.h.qprefix):
		n, created, client := parseValue(kv.Value)
		if k := q.byKey[key]; k != nil && k.createRev == kv.CreateRevision {
			k.n = n
			return
		}
		k := &qkey{key: key, createRev: kv.CreateRevision, n: n, lease: kv.Lease, created: created, client: client}
		q.byKey[key] = k
		q.keys = append(q.keys, k) // created now, so after every key present
		q.h.keyCreated(k)
	}
}

// delete applies a delete of any key of the semaphore.
func (q *queue) delete(key string) {
	switch {
	case key == q.h.capKey && !q.h.capFixed:
		q.capacity, q.capRev = 0, 0
	case key == q.h.brokenKey:
		q.broken, q.reason = false, ""
	default:
		k := q.byKey[key]
		if k == nil {
			return
		}
		delete(q.byKey, key)
		for i, x := range q.keys {
			if x == k {
				q.keys = append(q.keys[:i], q.keys[i+1:]...)
				break
			}
		}
		q.h.keyDeleted(k)
	}
}

// settle applies the rule at rev and tells this handle's requests.
func (q *queue) settle(rev int64) {
	var sum int64
	for _, k := range q.keys {
		switch k.state {
		case keyDead:
			continue
		case keyWaiting:
			switch {
			case q.broken:
				k.state, k.dead, k.deadAs = keyDead, fmt.Errorf("broken: %q: %w", q.reason, semaphore.ErrBroken), semaphore.Broken
			case k.n > q.capacity:
				k.state, k.dead, k.deadAs = keyDead, fmt.Errorf("capacity shrunk to %d: %w", q.capacity, semaphore.ErrTooLarge), semaphore.TooLarge
			case addSat(sum, k.n) <= q.capacity:
				k.state, k.grantRev = keyGranted, rev
			}
			if k.state != keyWaiting {
				q.h.keySettled(k)
			}
			if k.state == keyDead {
				continue
			}
		}
		sum = addSat(sum, k.n)
	}
	q.advance(rev)
}

func (q *queue) advance(rev int64) {
	if rev > q.rev {
		q.rev = rev
		close(q.advanced)
		q.advanced = make(chan struct{})
	}
}

// fits reports whether n more units fit now after every key counted, and the
// revision this is known at.
func (q *queue) fits(n int64) (bool, int64) {
	var sum int64
	for _, k := range q.keys {
		if k.state != keyDead {
			sum = addSat(sum, k.n)
		}
	}
	return !q.broken && addSat(sum, n) <= q.capacity, q.rev
}

// held returns the units of the keys that count as holders: granted, or of
// unknown state.
func (q *queue) held() int64 {
	var sum int64
	for _, k := range q.keys {
		if k.state == keyGranted || k.state == keyUnknown {
			sum = addSat(sum, k.n)
		}
	}
	return sum
}

// addSat adds non-negative weights, saturating instead of overflowing.
func addSat(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}

// formatValue and parseValue are the queue keys' value: "units unixnano client".
func formatValue(n int64, created time.Time, client string) string {
	return strconv.FormatInt(n, 10) + " " + strconv.FormatInt(created.UnixNano(), 10) + " " + client
}

func parseValue(v []byte) (n int64, created time.Time, client string) {
	f := strings.SplitN(string(v), " ", 3)
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		// A key this package did not write: make it block, never let it in.
		n = 1<<63 - 1
	}
	if len(f) > 1 {
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			created = time.Unix(0, ns)
		}
	}
	if len(f) > 2 {
		client = f[2]
	}
	return n, created, client
}
