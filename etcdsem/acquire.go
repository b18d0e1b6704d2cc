package etcdsem

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// acquire is Acquire in plain mode: one key in the queue, on the session's
// lease, granted by the rule; see Semaphore.Acquire for the contract. A block
// pool takes its blocks with it.
func (h *handle) acquire(ctx context.Context, n int64) (*Units, error) {
	start := time.Now()
	if ctx.Err() != nil {
		return nil, h.waitError(ctx, acquireCall(n), start)
	}
	cctx, stop := h.sess.callContext(ctx)
	defer stop()
	for {
		l, err := h.sess.leaseFor(cctx)
		if err != nil {
			return nil, h.rpcError(ctx, acquireCall(n), start, err)
		}
		h.mu.Lock()
		if h.sess.closed.Load() {
			h.mu.Unlock()
			return nil, h.closedError(acquireCall(n))
		}
		r := h.newRequestLocked(l, n)
		h.mu.Unlock()
		if r == nil {
			continue // l was lost meanwhile
		}
		resp, attempts, err := h.txnAcquire(cctx, r)
		if err != nil {
			gone := classify(err) == rpcLeaseGone
			if gone {
				l.fail(fmt.Errorf("lease %x not found on the server: %w", int64(l.id), ErrLost)) // fails r
			}
			h.mu.Lock()
			failed, ferr := r.state == stateFailed, r.err
			h.abandonLocked(r)
			h.mu.Unlock()
			switch {
			case ctx.Err() != nil:
				return nil, h.waitError(ctx, acquireCall(n), start)
			case gone && attempts == 1:
				continue // nothing was written: try again on a new lease
			case failed:
				return nil, ferr // its lease was lost or the handle closed meanwhile
			}
			return nil, h.rpcError(ctx, acquireCall(n), start, err)
		}
		if resp != nil { // nil: granted before the answer came
			if err := h.afterWrite(r, resp, attempts); err != nil {
				return nil, err
			}
		}
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		h.mu.Lock()
		if ctx.Err() != nil && r.state == stateWaiting || ctx.Err() != nil && r.state == stateHeld {
			// Decided on ctx whenever it has ended, even if a grant raced it:
			// a failed call leaves no trace, and the units pass on.
			h.abandonLocked(r)
			h.mu.Unlock()
			return nil, h.waitError(ctx, acquireCall(n), start)
		}
		defer h.mu.Unlock()
		if r.state != stateHeld {
			return nil, r.err
		}
		return &Units{h: h, hold: r, token: r.createRev}, nil
	}
}

// txnAcquire writes r's key in one transaction: if the semaphore is not
// broken, n does not exceed the capacity and the key is absent, put the key;
// otherwise read the key, the broken key and the capacity. An attempt whose
// outcome is unknown is retried, the same transaction (an attempt that timed
// out by one twice as long: see attempts), until it gets an answer,
// etcd refuses it, its lease is gone, r is settled (granted, with a nil
// answer, or failed: its lease lost, the handle closed) or ctx ends: a retry
// after a write that landed takes the else branch and finds the key, keeping
// its place.
func (h *handle) txnAcquire(ctx context.Context, r *request) (*clientv3.TxnResponse, int, error) {
	val := formatValue(r.n, r.born, h.clientTag)
	bound := attempts{s: h.sess}
	for attempts := 1; ; attempts++ {
		actx, cancel := bound.context(ctx)
		resp, err := h.sess.cli.Txn(actx).If(
			clientv3.Compare(clientv3.Version(r.key), "=", 0),
			clientv3.Compare(clientv3.Version(h.brokenKey), "=", 0),
			h.capAtLeast(r.n),
		).Then(
			clientv3.OpPut(r.key, val, clientv3.WithLease(r.lease.id)),
		).Else(
			clientv3.OpGet(r.key),
			clientv3.OpGet(h.brokenKey),
			clientv3.OpGet(h.capKey),
		).Commit()
		bound.ended(actx, err)
		cancel()
		if err == nil || ctx.Err() != nil || classify(err) != rpcUnknown {
			return resp, attempts, err
		}
		select {
		case <-ctx.Done():
			return nil, attempts, ctx.Err()
		case <-r.done:
			// Settled meanwhile: granted by the watch, which saw an earlier
			// attempt's write (its answer is not needed), or failed (its
			// lease lost, the handle closed).
			h.mu.Lock()
			granted := r.state == stateHeld
			h.mu.Unlock()
			if granted {
				return nil, attempts, nil
			}
			return nil, attempts, err
		case <-time.After(retryPause):
		}
	}
}

// capAtLeast compares the capacity with n: values are zero-padded, so etcd's
// byte-wise comparison orders them as numbers; etcd has no ">=". A Set's key
// has no cap key: its capacity is fixed and n was checked against it before
// the call, so the comparison is one that always holds.
func (h *handle) capAtLeast(n int64) clientv3.Cmp {
	if h.capFixed {
		return clientv3.Compare(clientv3.CreateRevision(h.capKey), "<", math.MaxInt64)
	}
	if n == 0 {
		return clientv3.Compare(clientv3.Version(h.capKey), ">", 0)
	}
	return clientv3.Compare(clientv3.Value(h.capKey), ">", formatUnits(n-1))
}

// afterWrite decides what the acquire transaction's answer means: a key written
// (the watch grants it, at once if everything before it fits), a retry that
// found its key, a broken semaphore or a request too large.
func (h *handle) afterWrite(r *request, resp *clientv3.TxnResponse, attempts int) error {
	if resp.Succeeded {
		// Granted or not, the handle's watch decides, from the event of this
		// very write: the event arrives with the reply, and reading the queue
		// here instead would cost a range over every key name the queue ever
		// had (etcd keeps deleted keys in its index until compaction).
		h.mu.Lock()
		defer h.mu.Unlock()
		if r.createRev == 0 {
			r.createRev = resp.Header.Revision
		}
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		r.createRev = kvs[0].CreateRevision // a retry found its own earlier write
		return nil
	}
	var err error
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		err = h.brokenError(acquireCall(r.n), string(kvs[0].Value))
	} else {
		c := capacityOf(resp.Responses[2].GetResponseRange())
		err = h.tooLargeError(acquireCall(r.n), c)
	}
	r.finish(stateFailed, err)
	if attempts == 1 {
		delete(h.mine, r.key) // nothing was written and no earlier attempt can land
	}
	return err
}

// abandonLocked gives up r for a caller that is leaving: its key, written or
// still in flight, is deleted when known, and granted units pass on. h.mu is
// held.
func (h *handle) abandonLocked(r *request) {
	switch r.state {
	case stateWaiting:
		close(r.done)
	case stateHeld:
	default:
		return
	}
	r.state = stateAbandoned
	if r.createRev != 0 {
		h.sess.deleteLater(r.key, r.createRev)
		return
	}
	// Its write may never land, or land late: the request is forgotten
	// now, so that it holds nothing in memory, and a key that lands later
	// is one of the lease that no request owns, which the watch deletes
	// (keyCreated; Set.apply for a key no longer in memory).
	delete(h.mine, r.key)
}

func capacityOf(rr *etcdserverpb.RangeResponse) int64 {
	if rr == nil || len(rr.Kvs) == 0 {
		return 0
	}
	c, err := strconv.ParseInt(string(rr.Kvs[0].Value), 10, 64)
	if err != nil || c < 0 {
		return 0
	}
	return c
}

// waitError is the error of an acquire c whose ctx ended, started at start:
// TimedOut if its deadline passed, matching semaphore.ErrTimedOut too, and
// Cancelled otherwise, whatever its cause matches.
func (h *handle) waitError(ctx context.Context, c call, start time.Time) error {
	deadline, why, matches := errs.Context(ctx)
	after := " after " + time.Since(start).Round(time.Millisecond).String() + ": " + why
	if deadline {
		return h.fail(c, semaphore.TimedOut, "timed out"+after, append(matches, semaphore.ErrTimedOut)...)
	}
	return h.fail(c, semaphore.Cancelled, "canceled"+after, matches...)
}

// rpcError is the error of an acquire c whose RPC failed with err: the wait's
// if ctx ended, otherwise failed'h.
func (h *handle) rpcError(ctx context.Context, c call, start time.Time, err error) error {
	if ctx.Err() != nil {
		return h.waitError(ctx, c, start)
	}
	return h.failed(c, err)
}
