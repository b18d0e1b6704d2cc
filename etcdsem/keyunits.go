package etcdsem

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A request holds plain mode's Units: one key in etcd. Its methods are the
// Units methods of the same purpose (see holding).

func (r *request) count() int64 {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	if r.state != stateHeld && r.state != stateReleasing {
		return 0
	}
	return r.n
}

func (r *request) lost() <-chan struct{} { return r.lostCh }

func (r *request) lossCause() error {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	if r.state != stateLost {
		return nil
	}
	return r.err
}

// release deletes the key if its create revision is still the token.
func (r *request) release(ctx context.Context, u *Units) error {
	h := r.h
	h.mu.Lock()
	c := tokenCall("release", r.n, u.token)
	switch {
	case r.state == stateLost:
		err := h.fail(c, nil, r.err.Error(), r.err)
		h.mu.Unlock()
		return err
	case r.state != stateHeld && r.state != stateReleasing || h.sess.closed.Load():
		// Released, failed, abandoned, or given back by Close.
		h.mu.Unlock()
		return nil
	}
	r.state = stateReleasing
	h.mu.Unlock()
	cctx, stop := h.sess.callContext(ctx) // Close gives the units back: it ends the RPC
	defer stop()
	resp, err := h.sess.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(r.key), "=", u.token)).
		Then(clientv3.OpDelete(r.key)).Commit()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case r.state == stateClosed:
		return nil // Close, while the delete was in flight, gave the units back
	case r.state == stateLost:
		return h.fail(c, nil, r.err.Error(), r.err)
	case err != nil:
		// The delete may or may not have landed. Left to the caller, a key
		// nobody retries would hold its units for as long as the lease
		// lives: the session deletes it in the background until etcd
		// answers, and the watch marks it released when it is gone.
		r.releaseTried = true
		h.sess.deleteLater(r.key, u.token)
		return h.rpcFailed(c, err) // a Close meanwhile is stateClosed, above
	case !resp.Succeeded && r.state != stateReleased && !r.releaseTried:
		// The key was gone before our delete and the watch has not said why yet.
		r.markLost(fmt.Errorf("key %s was already gone: %w", r.key, ErrLost))
		delete(h.mine, r.key)
		return h.fail(c, nil, r.err.Error(), r.err)
	}
	r.state = stateReleased
	delete(h.mine, r.key)
	return nil
}

// giveBack lowers the key's weight by m in place, or deletes it at 0.
func (r *request) giveBack(ctx context.Context, u *Units, m int64) error {
	h := r.h
	c := tokenCall("return", m, u.token)
	h.mu.Lock()
	switch r.state {
	case stateLost:
		err := h.fail(c, nil, r.err.Error(), r.err)
		h.mu.Unlock()
		return err
	case stateClosed:
		h.mu.Unlock()
		return nil
	}
	held := r.n
	if r.state != stateHeld {
		held = 0
	}
	h.mu.Unlock()
	switch {
	case m > held:
		return errInsufficient(u, m, held)
	case m == held:
		return r.release(ctx, u)
	case m == 0:
		return nil
	}
	// The new weight is written from the count at the time of the call; two
	// concurrent Returns on one Units are a programmer error, as with any
	// non-atomic read-modify-write, and the guard below only keeps the key.
	cctx, stop := h.sess.callContext(ctx)
	defer stop()
	resp, err := h.sess.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(r.key), "=", u.token)).
		Then(clientv3.OpPut(r.key, formatValue(held-m, r.born, h.clientTag), clientv3.WithIgnoreLease())).Commit()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case r.state == stateClosed:
		return nil // Close, while the write was in flight, gave the units back
	case err != nil:
		return h.rpcFailed(c, err) // a Close meanwhile is stateClosed, above
	case !resp.Succeeded:
		r.markLost(fmt.Errorf("key %s was already gone: %w", r.key, ErrLost))
		delete(h.mine, r.key)
		return h.fail(c, nil, r.err.Error(), r.err)
	}
	if r.state == stateHeld {
		r.n = held - m
	}
	return nil
}
