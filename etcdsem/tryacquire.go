package etcdsem

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TryAcquire takes n units if they are free and nobody waits, and reports
// whether it did. It never jumps the queue and never appears in it: it decides
// on this handle's view of the queue, then writes its key in a transaction that
// fails if any queue key was written or the capacity or the broken state
// changed since that view, so the key it writes is granted by the rule at its
// creation. When its view was stale it catches up and tries again, a few times.
// That comparison visits every key name the queue ever had that etcd has not
// compacted away, so TryAcquire is slower than Acquire on a cluster that does
// not compact.
//
// It blocks only on RPCs (bounded by ctx). It returns an error wrapping
// semaphore.ErrBroken when broken, semaphore.ErrTooLarge when n exceeds the
// capacity, ErrClosed after Close, or the RPC error; an RPC whose outcome is
// unknown returns its error, and a key it may have written is deleted when the
// watch sees it. It panics if n is negative or above semaphore.MaxUnits.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64) (*Units, bool, error) {
	s.checkUnits("TryAcquire", n)
	if s.blocks != nil && !isBlockRequest(ctx) {
		return s.blocks.tryAcquire(ctx, n) // block mode: see WithBlocks
	}
	start := time.Now()
	if ctx.Err() != nil {
		return nil, false, s.waitError(ctx, tryCall(n), start)
	}
	if err := s.errIfClosed(tryCall(n)); err != nil {
		return nil, false, err
	}
	cctx, stop := s.callContext(ctx)
	defer stop()
	if err := s.catchUp(cctx); err != nil {
		return nil, false, s.rpcError(ctx, tryCall(n), start, err)
	}
	for attempt := 0; attempt < 4; attempt++ {
		l, err := s.currentLease(cctx)
		if err != nil {
			return nil, false, s.rpcError(ctx, tryCall(n), start, err)
		}
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, false, s.closedError(tryCall(n))
		case s.q.broken:
			err := s.brokenError(tryCall(n), s.q.reason)
			s.mu.Unlock()
			return nil, false, err
		case n > s.q.capacity:
			err := s.tooLargeError(tryCall(n), s.q.capacity)
			s.mu.Unlock()
			return nil, false, err
		}
		ok, rev := s.q.fits(n)
		if !ok {
			s.mu.Unlock()
			return nil, false, nil
		}
		capRev := s.q.capRev
		r := s.newRequestLocked(l, n)
		s.mu.Unlock()
		if r == nil {
			continue // l was lost meanwhile
		}

		resp, err := s.cli.Txn(cctx).If(
			clientv3.Compare(clientv3.ModRevision(s.qprefix), "<", rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(s.capKey), "=", capRev),
			clientv3.Compare(clientv3.Version(s.brokenKey), "=", 0),
		).Then(
			clientv3.OpPut(r.key, formatValue(n, r.born, s.cfg.clientTag), clientv3.WithLease(l.id)),
		).Commit()
		if err != nil && classify(err) == rpcLeaseGone {
			// Nothing was written: try again on a new lease.
			l.fail(fmt.Errorf("lease %x not found on the server: %w", int64(l.id), ErrLost))
			continue
		}
		s.mu.Lock()
		if err != nil {
			s.abandonLocked(r)
			s.mu.Unlock()
			return nil, false, s.rpcError(ctx, tryCall(n), start, err)
		}
		if resp.Succeeded {
			r.createRev = resp.Header.Revision
			if r.state == stateWaiting {
				r.grantRev = r.createRev
				r.finish(stateHeld, nil)
			}
			defer s.mu.Unlock()
			if r.state != stateHeld {
				return nil, false, r.err // the lease was lost meanwhile
			}
			return &Units{s: s, r: r, token: r.createRev}, true, nil
		}
		r.finish(stateFailed, nil)
		delete(s.mine, r.key) // the transaction failed as a whole: nothing written
		s.mu.Unlock()
		if err := s.waitRevision(cctx, resp.Header.Revision); err != nil {
			return nil, false, s.rpcError(ctx, tryCall(n), start, err)
		}
	}
	return nil, false, nil
}

// catchUp waits until the mirror has applied every revision committed before
// the call: a linearizable read gives the current revision.
func (s *Semaphore) catchUp(ctx context.Context) error {
	resp, err := s.cli.Get(ctx, s.capKey, clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	return s.waitRevision(ctx, resp.Header.Revision)
}

// waitRevision waits until the mirror has applied revision rev. The watch
// sees only this semaphore's keys, so if the revisions up to rev were other
// keys' writes no event will bring the mirror there: it asks the server for a
// progress notification on the watch's stream, and again every
// progressPause, as the server answers only once the stream's watches have
// caught up. The request is a message on the open stream, not an RPC.
func (s *Semaphore) waitRevision(ctx context.Context, rev int64) error {
	var tick <-chan time.Time
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		if s.q.rev >= rev {
			s.mu.Unlock()
			return nil
		}
		ch := s.q.advanced
		s.mu.Unlock()
		if tick == nil {
			t := time.NewTicker(progressPause)
			defer t.Stop()
			tick = t.C
			s.requestProgress()
		}
		select {
		case <-ch:
		case <-tick:
			s.requestProgress()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// progressPause separates progress requests while a caller waits for the
// mirror to reach a revision.
const progressPause = 50 * time.Millisecond

// requestProgress asks for a progress notification on the watch's stream. It
// is best effort: waitRevision asks again until the mirror gets there.
func (s *Semaphore) requestProgress() {
	ctx, cancel := context.WithTimeout(watchContext(s.bgCtx), time.Second)
	defer cancel()
	_ = s.cli.RequestProgress(ctx)
}
