package etcdsem

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Acquire takes n units, waiting in FIFO order behind every earlier acquire of
// any handle, and returns them as Units tied to this handle's lease. It is
// granted at once, in one round trip, when n units are free and nobody waits.
//
// It blocks until the units are granted or ctx ends. It fails, taking nothing
// and holding nobody back, when ctx is already done, when n exceeds the
// capacity (semaphore.ErrTooLarge), or when the semaphore is broken
// (semaphore.ErrBroken). A waiter fails with ErrTooLarge if a Resize leaves n
// above the capacity, with ErrBroken on Break, with ErrLost if its lease is lost
// or its key deleted, and with ErrClosed on Close. When ctx ends it fails with
// ctx's error (and semaphore.ErrTimedOut for a deadline), its key is deleted,
// and if a grant raced the cancellation the units pass on to the next waiters.
//
// An RPC whose outcome is unknown (a timeout, a dropped connection) is retried
// with the same key: if the first attempt was written, the retry finds it and
// keeps its place. A request etcd refuses for good (too large, not permitted,
// its database full) ends the call with etcd's error, and a lease the server no
// longer knows with ErrLost. So every call ends: granted, refused, by ctx, by
// the loss of its lease (within the TTL when etcd cannot be reached), or by
// Close. Acquire never leaves a key behind when it fails.
// It panics if n is negative or above semaphore.MaxUnits.
func (s *Semaphore) Acquire(ctx context.Context, n int64) (*Units, error) {
	s.checkUnits("Acquire", n)
	if s.blocks != nil && !isBlockRequest(ctx) {
		return s.blocks.acquire(ctx, n) // block mode: see WithBlocks
	}
	start := time.Now()
	if ctx.Err() != nil {
		return nil, s.waitError(ctx, acquireCall(n), start)
	}
	cctx, stop := s.callContext(ctx)
	defer stop()
	for {
		l, err := s.currentLease(cctx)
		if err != nil {
			return nil, s.rpcError(ctx, acquireCall(n), start, err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, s.closedError(acquireCall(n))
		}
		r := s.newRequestLocked(l, n)
		s.mu.Unlock()
		if r == nil {
			continue // l was lost meanwhile
		}
		resp, attempts, err := s.txnAcquire(cctx, r)
		if err != nil {
			gone := classify(err) == rpcLeaseGone
			if gone {
				l.fail(fmt.Errorf("lease %x not found on the server: %w", int64(l.id), ErrLost)) // fails r
			}
			s.mu.Lock()
			failed, ferr := r.state == stateFailed, r.err
			s.abandonLocked(r)
			s.mu.Unlock()
			switch {
			case ctx.Err() != nil:
				return nil, s.waitError(ctx, acquireCall(n), start)
			case gone && attempts == 1:
				continue // nothing was written: try again on a new lease
			case failed:
				return nil, ferr // its lease was lost or the handle closed meanwhile
			}
			return nil, s.rpcError(ctx, acquireCall(n), start, err)
		}
		if resp != nil { // nil: granted before the answer came
			if err := s.afterWrite(r, resp, attempts); err != nil {
				return nil, err
			}
		}
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		s.mu.Lock()
		if ctx.Err() != nil && r.state == stateWaiting || ctx.Err() != nil && r.state == stateHeld {
			// Decided on ctx whenever it has ended, even if a grant raced it:
			// a failed call leaves no trace, and the units pass on.
			s.abandonLocked(r)
			s.mu.Unlock()
			return nil, s.waitError(ctx, acquireCall(n), start)
		}
		defer s.mu.Unlock()
		if r.state != stateHeld {
			return nil, r.err
		}
		return &Units{s: s, r: r, token: r.createRev}, nil
	}
}

// AcquireTimeout is Acquire with a deadline d from now. On expiry it returns an
// error matching semaphore.ErrTimedOut and context.DeadlineExceeded. If d <= 0
// it does not wait: it succeeds when TryAcquire would, and otherwise returns
// the timeout error.
func (s *Semaphore) AcquireTimeout(ctx context.Context, d time.Duration, n int64) (*Units, error) {
	if d <= 0 {
		u, ok, err := s.TryAcquire(ctx, n)
		if err != nil || ok {
			return u, err
		}
		return nil, s.fail(acquireCall(n), semaphore.TimedOut, "timed out after "+d.String()+": "+context.DeadlineExceeded.Error(),
			semaphore.ErrTimedOut, context.DeadlineExceeded)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return s.Acquire(ctx, n)
}

// txnAcquire writes r's key in one transaction: if the semaphore is not
// broken, n does not exceed the capacity and the key is absent, put the key;
// otherwise read the key, the broken key and the capacity. An attempt whose
// outcome is unknown is retried, the same transaction, until it gets an answer,
// etcd refuses it, its lease is gone, r is settled (granted, with a nil
// answer, or failed: its lease lost, the handle closed) or ctx ends: a retry
// after a write that landed takes the else branch and finds the key, keeping
// its place.
func (s *Semaphore) txnAcquire(ctx context.Context, r *request) (*clientv3.TxnResponse, int, error) {
	val := formatValue(r.n, r.born, s.cfg.clientTag)
	for attempts := 1; ; attempts++ {
		actx, cancel := context.WithTimeout(ctx, s.attemptTimeout())
		resp, err := s.cli.Txn(actx).If(
			clientv3.Compare(clientv3.Version(r.key), "=", 0),
			clientv3.Compare(clientv3.Version(s.brokenKey), "=", 0),
			s.capAtLeast(r.n),
		).Then(
			clientv3.OpPut(r.key, val, clientv3.WithLease(r.lease.id)),
		).Else(
			clientv3.OpGet(r.key),
			clientv3.OpGet(s.brokenKey),
			clientv3.OpGet(s.capKey),
		).Commit()
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
			s.mu.Lock()
			granted := r.state == stateHeld
			s.mu.Unlock()
			if granted {
				return nil, attempts, nil
			}
			return nil, attempts, err
		case <-time.After(retryPause):
		}
	}
}

// capAtLeast compares the capacity with n: values are zero-padded, so etcd's
// byte-wise comparison orders them as numbers; etcd has no ">=".
func (s *Semaphore) capAtLeast(n int64) clientv3.Cmp {
	if n == 0 {
		return clientv3.Compare(clientv3.Version(s.capKey), ">", 0)
	}
	return clientv3.Compare(clientv3.Value(s.capKey), ">", formatUnits(n-1))
}

// retryPause separates retries of an RPC whose outcome is unknown.
const retryPause = 50 * time.Millisecond

// attemptTimeout bounds one RPC attempt, so that a connection that went silent
// is abandoned and retried rather than waited on forever.
func (s *Semaphore) attemptTimeout() time.Duration { return max(s.cfg.ttl/3, time.Second) }

// afterWrite decides what the acquire transaction's answer means: a key written
// (the watch grants it, at once if everything before it fits), a retry that
// found its key, a broken semaphore or a request too large.
func (s *Semaphore) afterWrite(r *request, resp *clientv3.TxnResponse, attempts int) error {
	if resp.Succeeded {
		// Granted or not, the handle's watch decides, from the event of this
		// very write: the event arrives with the reply, and reading the queue
		// here instead would cost a range over every key name the queue ever
		// had (etcd keeps deleted keys in its index until compaction).
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.createRev == 0 {
			r.createRev = resp.Header.Revision
		}
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		r.createRev = kvs[0].CreateRevision // a retry found its own earlier write
		return nil
	}
	var err error
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		err = s.brokenError(acquireCall(r.n), string(kvs[0].Value))
	} else {
		c := capacityOf(resp.Responses[2].GetResponseRange())
		err = s.tooLargeError(acquireCall(r.n), c)
	}
	r.finish(stateFailed, err)
	if attempts == 1 {
		delete(s.mine, r.key) // nothing was written and no earlier attempt can land
	}
	return err
}

// abandonLocked gives up r for a caller that is leaving: its key, written or
// still in flight, is deleted when known, and granted units pass on. s.mu is
// held.
func (s *Semaphore) abandonLocked(r *request) {
	switch r.state {
	case stateWaiting:
		close(r.done)
	case stateHeld:
	default:
		return
	}
	r.state = stateAbandoned
	if r.createRev != 0 {
		s.deleteLater(r.key, r.createRev)
	}
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
func (s *Semaphore) waitError(ctx context.Context, c call, start time.Time) error {
	deadline, why, matches := errs.Context(ctx)
	after := " after " + time.Since(start).Round(time.Millisecond).String() + ": " + why
	if deadline {
		return s.fail(c, semaphore.TimedOut, "timed out"+after, append(matches, semaphore.ErrTimedOut)...)
	}
	return s.fail(c, semaphore.Cancelled, "canceled"+after, matches...)
}

// rpcError is the error of an acquire c whose RPC failed with err: the wait's
// if ctx ended, otherwise failed's.
func (s *Semaphore) rpcError(ctx context.Context, c call, start time.Time, err error) error {
	if ctx.Err() != nil {
		return s.waitError(ctx, c, start)
	}
	return s.failed(c, err)
}

// checkUnits panics on a negative or oversized count: a programmer error.
func (s *Semaphore) checkUnits(op string, n int64) {
	if n < 0 || n > semaphore.MaxUnits {
		panic(fmt.Sprintf("etcdsem %q: %s(%d): units out of range [0, %d]", s.name, op, n, int64(semaphore.MaxUnits)))
	}
}
