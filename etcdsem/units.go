package etcdsem

import (
	"context"
	"fmt"
	"strconv"

	"github.com/fairsem/semaphore"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Units are units held by one acquire: one key in etcd, attached to the
// handle's lease. They are held until Release, Return of all of them, Close of
// the handle, or their loss, which Lost reports.
type Units struct {
	s     *Semaphore
	r     *request   // plain mode: the key; nil in block mode
	local *localHold // block mode: the local grant; nil in plain mode
	token int64      // fixed: the key's create revision; in block mode, see Sequence
}

// Token returns the fencing token: the create revision of the units' key.
// Tokens increase with every grant across the cluster, so a resource that
// remembers the highest token it has seen can reject a write from a holder that
// lost its units to a later one. In block mode it is the create revision of
// the newest block the handle has held, and Sequence orders the grants of one
// token.
func (u *Units) Token() int64 { return u.token }

// Count returns the units held: those acquired, less those returned; 0 after
// Release, loss or the handle's Close.
func (u *Units) Count() int64 {
	if u.local != nil {
		return u.local.count()
	}
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if u.r.state != stateHeld && u.r.state != stateReleasing {
		return 0
	}
	return u.r.n
}

// Lost returns a channel that is closed when the units are lost: the lease was
// not renewed in time (it is closed before the lease can expire on the server,
// so before anyone else can be granted these units), it expired or was revoked,
// or the key was deleted by someone else. It is never closed by Release or by
// the handle's Close.
//
// In block mode it closes when any block of the handle is lost, for every
// holder of the handle's blocks at once; the channel is shared, so it closes
// for units released before too, whose Err stays nil.
func (u *Units) Lost() <-chan struct{} {
	if u.local != nil {
		return u.local.ep.lost
	}
	return u.r.lost
}

// Err returns why the units were lost (an error wrapping ErrLost), or nil.
func (u *Units) Err() error {
	if u.local != nil {
		return u.local.err(u)
	}
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if u.r.state != stateLost {
		return nil
	}
	return u.s.fail(opCall("units of token "+strconv.FormatInt(u.token, 10)), nil, u.r.err.Error(), u.r.err)
}

// Release gives the units back: it deletes the key if its create revision is
// still the token, so a retry can never delete a newer key. It is idempotent
// and safe to retry after an error, and nil-safe. It returns nil once the units
// are given back, an error wrapping ErrLost if they had been lost before (so
// the caller learns its critical section may not have been exclusive), and
// the RPC error if etcd could not be reached (retry, or let the lease expire).
// Releasing after the handle's Close returns nil: Close gave the units back.
// In block mode it gives the units back to the handle's blocks, with no RPC.
func (u *Units) Release(ctx context.Context) error {
	if u == nil {
		return nil
	}
	if u.local != nil {
		return u.local.release(u)
	}
	s, r := u.s, u.r
	s.mu.Lock()
	c := tokenCall("release", r.n, u.token)
	switch {
	case r.state == stateLost:
		err := s.fail(c, nil, r.err.Error(), r.err)
		s.mu.Unlock()
		return err
	case r.state != stateHeld && r.state != stateReleasing || s.closed:
		// Released, failed, abandoned, or given back by Close.
		s.mu.Unlock()
		return nil
	}
	r.state = stateReleasing
	s.mu.Unlock()
	cctx, stop := s.callContext(ctx) // Close gives the units back: it ends the RPC
	defer stop()
	resp, err := s.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(r.key), "=", u.token)).
		Then(clientv3.OpDelete(r.key)).Commit()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.state == stateClosed:
		return nil // Close, while the delete was in flight, gave the units back
	case r.state == stateLost:
		return s.fail(c, nil, r.err.Error(), r.err)
	case err != nil:
		if r.state == stateReleasing {
			r.state = stateHeld
		}
		r.releaseTried = true
		return s.rpcFailed(c, err) // a Close meanwhile is stateClosed, above
	case !resp.Succeeded && r.state != stateReleased && !r.releaseTried:
		// The key was gone before our delete and the watch has not said why yet.
		r.markLost(fmt.Errorf("key %s was already gone: %w", r.key, ErrLost))
		delete(s.mine, r.key)
		return s.fail(c, nil, r.err.Error(), r.err)
	}
	r.state = stateReleased
	delete(s.mine, r.key)
	return nil
}

// Return gives back m of the units and keeps the rest (lowering the key's
// weight in place, so the holder keeps its place and its token). Returning all
// of them is Release. It returns an error wrapping semaphore.ErrInsufficientUnits
// if m exceeds Count, ErrLost if the units were lost, or the RPC error; after
// the handle's Close it returns nil, as Release does. It panics if m is
// negative.
func (u *Units) Return(ctx context.Context, m int64) error {
	if u.local != nil {
		return u.local.ret(u, m)
	}
	s, r := u.s, u.r
	s.checkUnits("Units.Return", m)
	c := tokenCall("return", m, u.token)
	s.mu.Lock()
	switch r.state {
	case stateLost:
		err := s.fail(c, nil, r.err.Error(), r.err)
		s.mu.Unlock()
		return err
	case stateClosed:
		s.mu.Unlock()
		return nil
	}
	held := r.n
	if r.state != stateHeld {
		held = 0
	}
	if m > held {
		s.mu.Unlock()
		return s.fail(c, nil, strconv.FormatInt(held, 10)+" held: "+semaphore.ErrInsufficientUnits.Error(), semaphore.ErrInsufficientUnits)
	}
	s.mu.Unlock()
	if m == held {
		return u.Release(ctx)
	}
	if m == 0 {
		return nil
	}
	// The new weight is written from the count at the time of the call; two
	// concurrent Returns on one Units are a programmer error, as with any
	// non-atomic read-modify-write, and the guard below only keeps the key.
	cctx, stop := s.callContext(ctx)
	defer stop()
	resp, err := s.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(r.key), "=", u.token)).
		Then(clientv3.OpPut(r.key, formatValue(held-m, r.born, s.cfg.clientTag), clientv3.WithIgnoreLease())).Commit()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.state == stateClosed:
		return nil // Close, while the write was in flight, gave the units back
	case err != nil:
		return s.rpcFailed(c, err) // a Close meanwhile is stateClosed, above
	case !resp.Succeeded:
		r.markLost(fmt.Errorf("key %s was already gone: %w", r.key, ErrLost))
		delete(s.mine, r.key)
		return s.fail(c, nil, r.err.Error(), r.err)
	}
	if r.state == stateHeld {
		r.n = held - m
	}
	return nil
}
