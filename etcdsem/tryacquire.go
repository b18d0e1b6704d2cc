package etcdsem

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// tryAcquire is TryAcquire in plain mode: see Semaphore.TryAcquire for the
// contract. A block pool takes its blocks with it when it has no units free.
func (h *handle) tryAcquire(ctx context.Context, n int64) (*Units, bool, error) {
	start := time.Now()
	if ctx.Err() != nil {
		return nil, false, h.waitError(ctx, tryCall(n), start)
	}
	if err := h.errIfClosed(tryCall(n)); err != nil {
		return nil, false, err
	}
	cctx, stop := h.sess.callContext(ctx)
	defer stop()
	if err := h.catchUp(cctx); err != nil {
		return nil, false, h.rpcError(ctx, tryCall(n), start, err)
	}
	for attempt := 0; attempt < 4; attempt++ {
		l, err := h.sess.leaseFor(cctx)
		if err != nil {
			return nil, false, h.rpcError(ctx, tryCall(n), start, err)
		}
		h.mu.Lock()
		switch {
		case h.sess.closed.Load():
			h.mu.Unlock()
			return nil, false, h.closedError(tryCall(n))
		case h.q.broken:
			err := h.brokenError(tryCall(n), h.q.reason)
			h.mu.Unlock()
			return nil, false, err
		case n > h.q.capacity:
			err := h.tooLargeError(tryCall(n), h.q.capacity)
			h.mu.Unlock()
			return nil, false, err
		}
		ok, rev := h.q.fits(n)
		if !ok {
			h.mu.Unlock()
			return nil, false, nil
		}
		capRev := h.q.capRev
		r := h.newRequestLocked(l, n)
		h.mu.Unlock()
		if r == nil {
			continue // l was lost meanwhile
		}

		resp, err := h.sess.cli.Txn(cctx).If(
			clientv3.Compare(clientv3.ModRevision(h.qprefix), "<", rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(h.capKey), "=", capRev), // 0 for a Set's key: it has none
			clientv3.Compare(clientv3.Version(h.brokenKey), "=", 0),
		).Then(
			clientv3.OpPut(r.key, formatValue(n, r.born, h.clientTag), clientv3.WithLease(l.id)),
		).Commit()
		if err != nil && classify(err) == rpcLeaseGone {
			// Nothing was written: try again on a new lease.
			l.fail(fmt.Errorf("lease %x not found on the server: %w", int64(l.id), ErrLost))
			continue
		}
		h.mu.Lock()
		if err != nil {
			h.abandonLocked(r)
			h.mu.Unlock()
			return nil, false, h.rpcError(ctx, tryCall(n), start, err)
		}
		if resp.Succeeded {
			r.createRev = resp.Header.Revision
			if r.state == stateWaiting {
				r.grantRev = r.createRev
				r.finish(stateHeld, nil)
			}
			defer h.mu.Unlock()
			if r.state != stateHeld {
				return nil, false, r.err // the lease was lost meanwhile
			}
			return &Units{h: h, hold: r, token: r.createRev}, true, nil
		}
		r.finish(stateFailed, nil)
		delete(h.mine, r.key) // the transaction failed as a whole: nothing written
		h.mu.Unlock()
		if err := h.waitRevision(cctx, resp.Header.Revision); err != nil {
			return nil, false, h.rpcError(ctx, tryCall(n), start, err)
		}
	}
	return nil, false, nil
}

// catchUp waits until the mirror has applied every revision committed before
// the call: a linearizable read gives the current revision.
func (h *handle) catchUp(ctx context.Context) error {
	resp, err := h.sess.cli.Get(ctx, h.capKey, clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	return h.waitRevision(ctx, resp.Header.Revision)
}

// waitRevision waits until the mirror has applied revision rev. The watch
// sees only this semaphore's keys, so if the revisions up to rev were other
// keys' writes no event will bring the mirror there: it asks the server for a
// progress notification on the watch's stream, and again every
// progressPause, as the server answers only once the stream's watches have
// caught up. The request is a message on the open stream, not an RPC.
func (h *handle) waitRevision(ctx context.Context, rev int64) error {
	var tick <-chan time.Time
	for {
		h.mu.Lock()
		if h.sess.closed.Load() {
			h.mu.Unlock()
			return ErrClosed
		}
		if h.q.rev >= rev {
			h.mu.Unlock()
			return nil
		}
		ch := h.q.advanced
		h.mu.Unlock()
		if tick == nil {
			t := time.NewTicker(progressPause)
			defer t.Stop()
			tick = t.C
			h.sess.requestProgress()
		}
		select {
		case <-ch:
		case <-tick:
			h.sess.requestProgress()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// progressPause separates progress requests while a caller waits for the
// mirror to reach a revision.
const progressPause = 50 * time.Millisecond
