package etcdsem

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// request is one acquire by this handle, from before its key is written until
// the key is gone. Guarded by Semaphore.mu, except the fixed fields.
type request struct {
	// fixed at creation
	h      *handle
	key    string
	lease  *lease
	done   chan struct{} // closed when state leaves stateWaiting
	lostCh chan struct{} // closed when held units are lost (markLost)
	born   time.Time     // written into the key, for Stats' ages

	n         int64 // units asked for, then held (Return lowers it)
	createRev int64 // the key's create revision (the token); 0 until known
	grantRev  int64 // the revision at which the rule granted it
	state     reqState
	err       error // why it failed (stateFailed) or was lost (stateLost)

	releaseTried bool // a Release RPC failed: its delete may have landed
}

type reqState uint8

const (
	stateWaiting   reqState = iota // the caller waits in Acquire (or TryAcquire)
	stateHeld                      // granted, returned to the caller as Units
	stateReleasing                 // Release sent the delete; its outcome is not known yet
	stateReleased                  // given back
	stateFailed                    // the caller got an error; the key is being removed
	stateAbandoned                 // the caller gave up; the key is removed when seen
	stateLost                      // held units lost: the lease or the key is gone
	stateClosed                    // held units given back by Close (it revoked the lease)
)

// finish ends the wait of a waiting request.
func (r *request) finish(st reqState, err error) {
	if r.state != stateWaiting {
		return
	}
	r.state, r.err = st, err
	close(r.done)
}

// markLost tells a holder its units are gone.
func (r *request) markLost(cause error) {
	if r.state == stateLost {
		return
	}
	r.state, r.err = stateLost, cause
	close(r.lostCh)
}

// newRequest registers a request for n units on lease l before its key is
// written, so that the watch can link the key to it whenever it sees it, even
// before the write's reply arrives. It returns nil, registering nothing, if l
// is no longer the handle's lease: l was lost after the caller got it, and its
// loss, which told every request on l then, would never tell this one; the
// caller takes the current lease instead. h.mu must be held.
func (h *handle) newRequestLocked(l *lease, n int64) *request {
	// The loss is declared (err) before the handle is told (leaseLost, under
	// mu): a request registered before that telling is told, and one after
	// sees the loss here.
	if l.err() != nil {
		return nil
	}
	r := &request{
		h:      h,
		key:    h.keyPrefix(l) + strconv.FormatUint(h.seq.Add(1), 16),
		lease:  l,
		n:      n,
		done:   make(chan struct{}),
		lostCh: make(chan struct{}),
		born:   time.Now(),
	}
	h.mine[r.key] = r
	return r
}

// keyPrefix is the prefix of the keys written on lease l: one lease per
// handle, so it is the handle's too.
func (h *handle) keyPrefix(l *lease) string {
	return fmt.Sprintf("%s%016x-", h.qprefix, int64(l.id))
}

// keyCreated links a key seen by the watch to this handle's request, and
// removes a key whose caller already gave up. h.mu is held.
func (h *handle) keyCreated(k *qkey) {
	r := h.mine[k.key]
	if r == nil {
		// A key of this handle's lease that no request owns: a write whose
		// caller is long done (released, failed) landed late, e.g. a request
		// a frozen server executed after the client had retried it elsewhere.
		// Left alone it would hold units for as long as the lease lives.
		if l := h.sess.current(); l != nil && strings.HasPrefix(k.key, h.keyPrefix(l)) {
			h.sess.deleteLater(k.key, k.createRev)
		}
		return
	}
	r.createRev = k.createRev
	if r.state == stateAbandoned || r.state == stateFailed {
		h.sess.deleteLater(k.key, k.createRev)
	}
}

// keySettled reports the rule's decision on a key to this handle's request.
// h.mu is held.
func (h *handle) keySettled(k *qkey) {
	r := h.mine[k.key]
	if r == nil {
		return
	}
	switch {
	case k.state == keyGranted && r.state == stateWaiting:
		r.grantRev = k.grantRev
		r.finish(stateHeld, nil)
	case k.state == keyDead && r.state == stateWaiting:
		r.finish(stateFailed, h.fail(acquireCall(r.n), k.deadAs, k.dead.Error(), k.dead))
		h.sess.deleteLater(k.key, k.createRev)
	case r.state == stateAbandoned:
		// A grant that raced the caller's cancellation: delete the key so the
		// units pass on, as in-process.
		h.sess.deleteLater(k.key, k.createRev)
	}
}

// keyDeleted reports the deletion of a key to this handle's request. h.mu is
// held.
func (h *handle) keyDeleted(k *qkey) {
	r := h.mine[k.key]
	if r == nil || r.createRev != 0 && r.createRev != k.createRev {
		return
	}
	switch r.state {
	case stateWaiting:
		r.finish(stateFailed, h.fail(acquireCall(r.n), nil, "the waiting key was deleted: "+ErrLost.Error(), ErrLost))
	case stateHeld:
		r.markLost(fmt.Errorf("key %s deleted by someone else: %w", k.key, ErrLost))
	case stateReleasing:
		r.state = stateReleased
	}
	delete(h.mine, k.key)
}
