package etcdsem

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A Semaphore is a handle on a weighted, strictly FIFO semaphore kept in etcd
// under a name, shared by every handle on that name in any process. Acquire
// waits for units in arrival order and returns Units tied to the handle's lease:
// they come back when released, when the handle is closed, or when the holder
// stops renewing the lease (it crashed or was cut off); in the last case the
// holder's Units.Lost closes first. TryAcquire takes units only if that jumps
// nobody. Resize, Break, Repair and Drain administer the semaphore for every
// handle.
//
// A Semaphore keeps one watch on the name's keys and one lease, created on the
// first acquire and replaced if lost. It is safe for concurrent use. Close it
// when done: that gives back every unit it holds.
type Semaphore struct {
	*handle            // the semaphore's keys as this process sees and writes them
	acq     acquirer   // grants the callers: the handle (a key per acquire), or its block pool
	pool    *blockPool // block mode (WithBlocks): callers granted from blocks of the handle; nil in plain mode
}

// An acquirer grants a Semaphore's callers their units: its handle in plain
// mode, a key per acquire, and in block mode its block pool, from blocks that
// are the handle's acquires.
type acquirer interface {
	acquire(ctx context.Context, n int64) (*Units, error)
	tryAcquire(ctx context.Context, n int64) (*Units, bool, error)
}

// New returns a handle on the semaphore name, reading its state from etcd (with
// ctx) and, with WithCapacity, creating it if absent. Any non-empty string of
// at most MaxNameLen bytes, escaped, is a name; the semaphore's keys start with
// KeyPrefix(name), which no other name's keys start with. Without
// WithCapacity and without an existing capacity, the capacity is 0 and every
// acquire of units fails with ErrTooLarge until Resize sets one. It returns an
// error matching rpctypes.ErrRequestTooLarge, before any RPC, for a longer
// name: etcd would refuse to acquire it. It panics if cli is nil or name is
// empty.
func New(ctx context.Context, cli *clientv3.Client, name string, opts ...Option) (*Semaphore, error) {
	if cli == nil {
		panic(fmt.Sprintf("etcdsem: New(%q): nil client", name))
	}
	if name == "" {
		panic(`etcdsem: New(""): the name must not be empty`)
	}
	host, _ := os.Hostname()
	cfg := config{ttl: 10 * time.Second, margin: -1, clientTag: host + ":" + strconv.Itoa(os.Getpid())}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.margin < 0 {
		cfg.margin = max(cfg.ttl/10, 500*time.Millisecond)
	}
	var h *handle
	sess := newSession(cli, cfg, func(l *lease) { h.leaseLost(l) })
	h = newHandle(sess, name, cfg.clientTag)
	if n := len(h.prefix) - 1; n > MaxNameLen {
		return nil, h.fail(opCall("new"), nil, fmt.Sprintf("the name takes %d bytes in its keys, more than MaxNameLen (%d): %v",
			n, MaxNameLen, rpctypes.ErrRequestTooLarge), rpctypes.ErrRequestTooLarge)
	}
	if cfg.hasCap {
		_, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.Version(h.capKey), "=", 0)).
			Then(clientv3.OpPut(h.capKey, formatUnits(cfg.capacity))).Commit()
		if err != nil {
			return nil, h.rpcFailed(opCall("create"), err)
		}
	}
	resp, err := cli.Get(ctx, h.prefix, h.stateRange())
	if err != nil {
		return nil, h.rpcFailed(opCall("read state"), err)
	}
	h.loadState(ctx, resp)
	sess.watch(h.prefix, h.rprefix, h)
	s := &Semaphore{handle: h, acq: h}
	if cfg.blockSize > 0 {
		s.pool = newBlockPool(h, cfg.blockSize)
		s.acq = s.pool
		sess.spawn(newBlockManager(s.pool).run)
	}
	return s, nil
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

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
// the loss of its lease (within the TTL when etcd cannot be reached; after
// three leases in a row lost before their first use when etcd's replies take
// longer than the TTL less the margin), or by Close. Acquire never leaves a
// key behind when it fails.
// In block mode (WithBlocks) it is granted from the handle's blocks.
// It panics if n is negative or above semaphore.MaxUnits.
func (s *Semaphore) Acquire(ctx context.Context, n int64) (*Units, error) {
	s.checkUnits("Acquire", n)
	return s.acq.acquire(ctx, n)
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
// watch sees it. In block mode (WithBlocks) it takes free units of the
// handle's blocks, asking etcd for a block only when none are free. It
// panics if n is negative or above semaphore.MaxUnits.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64) (*Units, bool, error) {
	s.checkUnits("TryAcquire", n)
	return s.acq.tryAcquire(ctx, n)
}

// Close gives back every unit this handle holds (by revoking its lease), ends
// every call of the handle in flight (its waiters, and calls waiting on etcd)
// with ErrClosed and stops its watch. Closing is final: Release and
// Return of the handle's units return nil afterwards (Close gave them back; they
// are not lost, and Lost does not close), Close returns nil, and every other
// call fails with ErrClosed. Close waits at most the lease TTL for etcd; if etcd
// cannot be reached the units come back when the lease expires.
func (s *Semaphore) Close() error { return s.close() }

// formatUnits writes a capacity so that etcd's byte-wise comparison of values
// orders capacities as numbers (a transaction compares cap >= n).
func formatUnits(n int64) string { return fmt.Sprintf("%020d", n) }

// checkUnits panics on a negative or oversized count: a programmer error.
func checkUnits(op, what string, n int64) {
	if n < 0 || n > semaphore.MaxUnits {
		panic(fmt.Sprintf("etcdsem: %s: %s %d out of range [0, %d]", op, what, n, int64(semaphore.MaxUnits)))
	}
}
