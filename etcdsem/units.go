package etcdsem

import (
	"context"
	"strconv"

	"github.com/fairsem/semaphore"
)

// Units are units held by one acquire: one key in etcd, attached to the
// handle's lease, or in block mode units of the handle's blocks. They are
// held until Release, Return of all of them, Close of the handle, or their
// loss, which Lost reports.
type Units struct {
	h     *handle // the handle that granted them, which names them in errors
	hold  holding // what holds the units: a key in etcd, or a grant from the handle's blocks
	token int64   // fixed: the fencing token (Token)
	seq   int64   // fixed: the grant's number on its handle in block mode (Sequence); 0 in plain mode
}

// A holding is what a Units holds its units with: a key of the handle in
// etcd (request, plain mode) or a grant of units of the handle's blocks
// (localHold, block mode). Each method keeps the contract of the Units method
// of the same purpose.
type holding interface {
	count() int64
	lost() <-chan struct{}
	lossCause() error // why the units were lost, or nil
	release(ctx context.Context, u *Units) error
	giveBack(ctx context.Context, u *Units, m int64) error
}

// Token returns the fencing token: the create revision of the units' key.
// Tokens increase with every grant across the cluster, so a resource that
// remembers the highest token it has seen can reject a write from a holder that
// lost its units to a later one. In block mode it is the create revision of
// the newest block the handle has held, and Sequence orders the grants of one
// token.
func (u *Units) Token() int64 { return u.token }

// Sequence returns the grant's number on its handle in block mode (from 1,
// increasing with every local grant), and 0 in plain mode. A block-mode
// holder's fencing token is the pair (Token, Sequence): Token is the highest
// block token its handle has held, which orders it after every holder of the
// units in any earlier block, and Sequence orders it after the earlier local
// holders of the same token. A resource that fences by comparing (Token,
// Sequence) pairs in that order rejects a stale holder of either mode.
func (u *Units) Sequence() int64 { return u.seq }

// Count returns the units held: those acquired, less those returned; 0 after
// Release, loss or the handle's Close.
func (u *Units) Count() int64 { return u.hold.count() }

// Lost returns a channel that is closed when the units are lost: the lease was
// not renewed in time (it is closed before the lease can expire on the server,
// so before anyone else can be granted these units), it expired or was revoked,
// or the key was deleted by someone else. It is never closed by Release or by
// the handle's Close.
//
// In block mode it closes when any block of the handle is lost, for every
// holder of the handle's blocks at once; the channel is shared, so it closes
// for units released before too, whose Err stays nil.
func (u *Units) Lost() <-chan struct{} { return u.hold.lost() }

// Err returns why the units were lost (an error wrapping ErrLost), or nil.
func (u *Units) Err() error {
	cause := u.hold.lossCause()
	if cause == nil {
		return nil
	}
	return u.h.fail(opCall("units of token "+strconv.FormatInt(u.token, 10)), nil, cause.Error(), cause)
}

// Release gives the units back: it deletes the key if its create revision is
// still the token, so a retry can never delete a newer key. It is idempotent
// and safe to retry after an error, and nil-safe. It returns nil once the units
// are given back, an error wrapping ErrLost if they had been lost before (so
// the caller learns its critical section may not have been exclusive), and
// the RPC error if etcd could not be reached: the handle then goes on deleting
// the key in the background until etcd answers or the handle closes, so units
// whose Release failed are never held by nobody, and a retry is safe.
// Releasing after the handle's Close returns nil: Close gave the units back.
// In block mode it gives the units back to the handle's blocks, with no RPC.
func (u *Units) Release(ctx context.Context) error {
	if u == nil {
		return nil
	}
	return u.hold.release(ctx, u)
}

// Return gives back m of the units and keeps the rest (lowering the key's
// weight in place, so the holder keeps its place and its token). Returning all
// of them is Release. It returns an error wrapping semaphore.ErrInsufficientUnits
// if m exceeds Count, ErrLost if the units were lost, or the RPC error; after
// the handle's Close it returns nil, as Release does. In block mode it gives
// the units back to the handle's blocks, with no RPC. It panics if m is
// negative.
func (u *Units) Return(ctx context.Context, m int64) error {
	u.h.checkUnits("Units.Return", m)
	return u.hold.giveBack(ctx, u, m)
}

// errHold is the error of op ("release", "return") on n units of u, lost
// with cause.
func errHold(u *Units, op string, n int64, cause error) error {
	return u.h.fail(tokenCall(op, n, u.token), nil, cause.Error(), cause)
}

// errInsufficient is the error of a Return of m units of u, which holds
// fewer.
func errInsufficient(u *Units, m, held int64) error {
	return u.h.fail(tokenCall("return", m, u.token), nil,
		strconv.FormatInt(held, 10)+" held: "+semaphore.ErrInsufficientUnits.Error(), semaphore.ErrInsufficientUnits)
}
