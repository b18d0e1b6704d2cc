package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A session is what the keys of one process share in etcd: the client, the
// lease every key is attached to (granted when first needed, replaced after
// a loss), the goroutines that watch, delete and manage on its behalf, and
// the end of every call in flight when it closes. A Semaphore holds one
// session; its keys, its watch's mirror and its requests are its handle's
// (handle.go), which the session tells when a lease is lost. Everything
// here is per lease, not per semaphore, so that several semaphores could
// share one session: one lease, one renewal stream, one Close.
type session struct {
	// fixed at creation
	cli    *clientv3.Client
	ttl    time.Duration // asked for; the server may raise it
	margin time.Duration
	ctx    context.Context    // done once closed: ends every call in flight and every goroutine
	stop   context.CancelFunc // ends ctx
	wg     sync.WaitGroup     // the session's goroutines; close waits for them
	onLost func(*lease)       // told when a lease is lost, once it is no longer current

	closed atomic.Bool   // set once, before close ends anything; never cleared
	seq    atomic.Uint64 // numbers the keys written on the session's leases, so that no two share a name

	mu       sync.Mutex
	lease    *lease        // guarded by mu; nil before the first grant and after a loss or close
	granting chan struct{} // guarded by mu: closed when the grant in flight ends; nil if none
}

func newSession(cli *clientv3.Client, cfg config, onLost func(*lease)) *session {
	ctx, stop := context.WithCancel(context.Background())
	return &session{cli: cli, ttl: cfg.ttl, margin: cfg.margin, ctx: ctx, stop: stop, onLost: onLost}
}

// current returns the session's lease, or nil if it has none now.
func (s *session) current() *lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease
}

// leaseFor returns the session's lease, granting a new one if there is none.
// The grant runs outside mu, so that no other call waits on it: one caller
// grants while the others that need the lease wait for that grant, each for
// as long as its own ctx lets it, and take over if it fails. It returns
// ErrClosed once the session is closed.
func (s *session) leaseFor(ctx context.Context) (*lease, error) {
	early := 0 // leases this call granted that were lost before their first use, in a row
	for {
		s.mu.Lock()
		switch {
		case s.closed.Load():
			s.mu.Unlock()
			return nil, ErrClosed
		case s.lease != nil:
			l := s.lease
			s.mu.Unlock()
			return l, nil
		case s.granting != nil:
			ch := s.granting
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		s.granting = done
		s.mu.Unlock()

		sent := time.Now()
		l, err := grantLease(ctx, s.cli, s.ttl, s.margin, s.lost)
		took := time.Since(sent)
		s.mu.Lock()
		s.granting = nil
		close(done)
		switch {
		case err != nil:
			s.mu.Unlock()
			return nil, err
		case s.closed.Load():
			// close did not see this lease: give it up here.
			s.mu.Unlock()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.attemptTimeout())
			_ = l.close(rctx, s.cli)
			cancel()
			return nil, ErrClosed
		case l.expired():
			// Lost already: the grant's reply took longer than the TTL less
			// the margin. Once may be a pause; every time, a link too slow for
			// the TTL, which no retry mends.
			s.mu.Unlock()
			if early++; early == earlyLosses {
				return nil, fmt.Errorf("%d leases in a row lost before their first use: the last grant's reply took %v, longer than the TTL of %v less the margin of %v: %w",
					early, took.Round(time.Millisecond), l.ttl, l.margin, ErrLost)
			}
			continue
		}
		s.lease = l
		s.mu.Unlock()
		return l, nil
	}
}

// earlyLosses is how many leases in a row a call grants that are lost before
// their first use before it fails with ErrLost.
const earlyLosses = 3

// lost runs once when l is lost: it stops being the session's lease, then
// the session's user is told.
func (s *session) lost(l *lease) {
	s.mu.Lock()
	if s.lease == l {
		s.lease = nil
	}
	s.mu.Unlock()
	s.onLost(l)
}

// callContext returns a context for the RPCs and waits of one call on ctx: it
// ends with ctx, and when the session closes, with the cause ErrClosed, so
// that Close ends every call in flight. stop releases it when the call
// returns.
func (s *session) callContext(ctx context.Context) (cctx context.Context, stop func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(s.ctx, func() { cancel(ErrClosed) })
	return cctx, func() {
		unhook()
		cancel(nil)
	}
}

// attemptTimeout bounds one RPC attempt, so that a connection that went silent
// is abandoned and retried rather than waited on forever.
func (s *session) attemptTimeout() time.Duration { return max(s.ttl/3, time.Second) }

// An attempts bounds the attempts of one RPC that is retried until it is
// answered: each attempt that times out is followed by one twice as long, up
// to the lease TTL, so that a reply slower than one attempt (a slow link, a
// busy server) is waited for rather than asked for again and again for as long
// as the caller lets it. A reply slower than the TTL cannot keep the lease
// either: the call then ends with the lease's loss.
type attempts struct {
	s    *session
	wait time.Duration // the bound of the next attempt; 0 before the first
}

// context returns the context of the next attempt on ctx.
func (a *attempts) context(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.wait == 0 {
		a.wait = a.s.attemptTimeout()
	}
	return context.WithTimeout(ctx, a.wait)
}

// ended records how the attempt of actx ended: one that timed out doubles the
// next's bound, an answer resets it.
func (a *attempts) ended(actx context.Context, err error) {
	switch {
	case err == nil:
		a.wait = 0
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		a.wait = max(min(2*a.wait, a.s.ttl), a.s.attemptTimeout())
	}
}

// retryPause separates retries of an RPC whose outcome is unknown.
const retryPause = 50 * time.Millisecond

// deleteLater deletes key if its create revision is still createRev, on a
// goroutine that retries until it succeeds or the session closes (closing
// revokes the lease, which deletes the key anyway). The guard keeps a retried
// delete from deleting a newer key of the same name.
func (s *session) deleteLater(key string, createRev int64) {
	s.spawn(func() {
		a := attempts{s: s}
		for s.ctx.Err() == nil {
			actx, cancel := a.context(s.ctx)
			_, err := s.cli.Txn(actx).
				If(clientv3.Compare(clientv3.CreateRevision(key), "=", createRev)).
				Then(clientv3.OpDelete(key)).Commit()
			a.ended(actx, err)
			cancel()
			if err == nil {
				return
			}
			select {
			case <-s.ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// startClose marks the session closed and takes its lease: from here on no
// lease is granted and every leaseFor fails with ErrClosed. It reports false
// if the session was closed already.
func (s *session) startClose() (*lease, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil, false
	}
	l := s.lease
	s.lease = nil
	return l, true
}

// finishClose ends every call in flight and every goroutine of the session,
// and revokes l (taken by startClose), waiting at most its TTL for etcd.
func (s *session) finishClose(l *lease) error {
	s.stop()
	var err error
	if l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
		err = l.close(ctx, s.cli)
		cancel()
	}
	s.wg.Wait()
	return err
}

// spawn runs f on a goroutine of the session, which close waits for, and
// reports true; once the session is closing it runs nothing and reports
// false. f must return once the session's ctx is done. The check and the
// count are made under mu, where startClose sets closed, so that no
// goroutine is counted after finishClose may have started waiting.
func (s *session) spawn(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
	return true
}
