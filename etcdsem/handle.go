package etcdsem

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fairsem/semaphore"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A handle is one process's view and use of a semaphore's keys in etcd: every
// acquire it makes is one key in the FIFO queue, on its session's lease,
// granted by the rule (doc.go) as its mirror of the keys shows it. It is
// what a plain-mode Semaphore grants its callers from, what Resize, Break,
// Repair, Drain and Stats work on, and what a block pool takes its blocks
// from: a block is a handle's Units like any other.
type handle struct {
	// fixed at creation
	sess      *session
	name      string
	keyLayout // where the keys are; see keys.go
	clientTag string
	seq       *atomic.Uint64 // the session's: numbers the keys written on it
	capFixed  bool           // a Set's key: the capacity is capacity, and the cap key is neither read nor written
	capacity  int64          // the capacity of a Set's key (capFixed)

	mu   sync.Mutex
	mine map[string]*request // guarded by mu: this handle's acquires, by key, from before the write until the key is gone
	q    queue               // guarded by mu: the mirror of the keys and the grant rule
}

func newHandle(sess *session, name string, clientTag string) *handle {
	h := &handle{sess: sess, name: name, keyLayout: keysOf(name), clientTag: clientTag, seq: &sess.seq, mine: make(map[string]*request)}
	h.q.init(h)
	return h
}

// loadState sets the mirror from a read of every key. A queue key present then
// may be a holder kept by a shrinking Resize or a waiter: only the history can
// tell, so loadState replays it from just before the oldest queue key was
// created, through the rule. If that history is compacted, keys that do not fit
// are counted but their state stays unknown (see queue). It runs in New,
// before the watch starts and before any call can reach the handle, and for a
// Set's key before the watch applies to it (Set.load).
func (h *handle) loadState(ctx context.Context, now *clientv3.GetResponse) {
	oldest := int64(0)
	for _, kv := range now.Kvs {
		if strings.HasPrefix(string(kv.Key), h.qprefix) && (oldest == 0 || kv.CreateRevision < oldest) {
			oldest = kv.CreateRevision
		}
	}
	// A Set's key needs no history: a key of it dies only when broken or
	// larger than the capacity, which a key of a Set never is (the capacity
	// is fixed, and checked before the write), and waiting or granted, a key
	// counts the same in the rule. Its keys present now that do not fit are
	// counted as unknown, and its own keys wait behind them as the rule says.
	if oldest > 1 && !h.capFixed {
		base, err := h.sess.cli.Get(ctx, h.prefix, h.stateRange(), clientv3.WithRev(oldest-1))
		if err == nil {
			h.q.load(oldest-1, base.Kvs)
			err = replay(ctx, h.sess.cli, h.keyLayout, oldest, now.Header.Revision, h.q.applyEvents)
			if err == nil {
				h.q.advance(now.Header.Revision)
				return
			}
		}
		h.q = queue{}
		h.q.init(h) // compacted or failed: start again from the current state
	}
	h.q.load(now.Header.Revision, now.Kvs)
}

// next, apply and resync make the handle the mirror its session's watch
// keeps (see watch).

func (h *handle) next() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.q.rev + 1
}

func (h *handle) apply(resp clientv3.WatchResponse) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.q.applyEvents(resp.Events)
	if resp.IsProgressNotify() {
		h.q.advance(resp.Header.Revision)
	}
}

// resync re-reads the keys after the history the watch needed was compacted.
// Revisions were skipped, so this handle's waiters cannot know whether they
// were granted or failed in the gap: they fail with ErrLost and their keys are
// deleted (the units pass on if they had been granted). Holders stay holders.
func (h *handle) resync(ctx context.Context) bool {
	resp, err := h.sess.cli.Get(ctx, h.prefix, h.stateRange())
	if err != nil {
		return false // the watch re-watches from the old revision and lands here again
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	present := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		present[string(kv.Key)] = true
	}
	for _, k := range append([]*qkey(nil), h.q.keys...) {
		if !present[k.key] {
			h.q.delete(k.key)
		}
	}
	if _, ok := present[h.brokenKey]; !ok {
		h.q.delete(h.brokenKey)
	}
	if _, ok := present[h.capKey]; !ok {
		h.q.delete(h.capKey)
	}
	for _, kv := range resp.Kvs {
		k := h.q.byKey[string(kv.Key)]
		if k != nil && k.createRev != kv.CreateRevision {
			h.q.delete(k.key)
		}
		h.q.put(kv)
	}
	for _, k := range h.q.keys {
		if k.state == keyWaiting {
			k.state = keyUnknown // its history is gone: count it, never grant it
		}
	}
	for key, r := range h.mine {
		if r.state == stateWaiting {
			r.finish(stateFailed, h.fail(acquireCall(r.n), nil, "place in the queue lost: watch history compacted: "+ErrLost.Error(), ErrLost))
		}
		if k := h.q.byKey[key]; k != nil && (r.state == stateFailed || r.state == stateAbandoned) {
			k.state = keyUnknown
			h.sess.deleteLater(k.key, k.createRev)
		}
	}
	h.q.advance(resp.Header.Revision)
	return true
}

// leaseLost runs once when l is lost: every request on it fails, every holder
// on it is told.
func (h *handle) leaseLost(l *lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cause := l.err()
	for key, r := range h.mine {
		if r.lease != l {
			continue
		}
		switch r.state {
		case stateWaiting:
			r.finish(stateFailed, h.fail(acquireCall(r.n), nil, cause.Error(), cause))
		case stateHeld, stateReleasing:
			r.markLost(cause)
		}
		delete(h.mine, key)
	}
}

// close ends the handle with its session: see Semaphore.Close.
func (h *handle) close() error {
	l, first := h.sess.startClose()
	if !first {
		return nil
	}
	h.closeRequests()
	if err := h.sess.finishClose(l); err != nil { // ends every call in flight (see callContext)
		return h.fail(opCall("close"), nil, "revoke lease: "+err.Error(), err)
	}
	return nil
}

// closeRequests settles every request of the handle for its session's Close,
// after startClose and before finishClose revokes the lease.
func (h *handle) closeRequests() {
	h.mu.Lock()
	for key, r := range h.mine {
		switch r.state {
		case stateWaiting:
			r.finish(stateFailed, h.closedError(acquireCall(r.n)))
		case stateHeld, stateReleasing:
			// Settled here, before the revocation deletes the keys: the watch
			// would otherwise report the deletions as losses. The error is for
			// an Acquire granted just now that has not returned yet.
			r.state, r.err = stateClosed, h.closedError(acquireCall(r.n))
		}
		delete(h.mine, key)
	}
	h.mu.Unlock()
}

// errIfClosed returns the error of c wrapping ErrClosed if the handle is
// closed. A call that passed it before Close is ended by Close (see
// callContext), but a write it sent may still land: the handle's state does
// not guard etcd's.
func (h *handle) errIfClosed(c call) error {
	if h.sess.closed.Load() {
		return h.closedError(c)
	}
	return nil
}

// checkUnits panics on a negative or oversized count: a programmer error.
func (h *handle) checkUnits(op string, n int64) {
	if n < 0 || n > semaphore.MaxUnits {
		panic(fmt.Sprintf("etcdsem %q: %s(%d): units out of range [0, %d]", h.name, op, n, int64(semaphore.MaxUnits)))
	}
}
