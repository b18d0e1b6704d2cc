package etcdsem

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// fixed after New
	cli       *clientv3.Client
	name      string
	keyLayout // where the keys are; see keys.go
	cfg       config
	blocks    *blockPool // block mode's callers and blocks; nil in plain mode
	stopWatch context.CancelFunc
	bgCtx     context.Context // done when the handle closes
	wg        sync.WaitGroup  // the watch goroutine and background key deletions

	mu     sync.Mutex
	closed bool   // guarded by mu; terminal
	lease  *lease // guarded by mu; nil before the first acquire and after a loss
	seq    uint64 // guarded by mu; numbers this handle's keys
	mine   map[string]*request
	q      queue // guarded by mu: the mirror of the keys in etcd and the grant rule

	// granting is closed when the grant of a lease in flight ends; nil when
	// none is. Guarded by mu.
	granting chan struct{}
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
	s := &Semaphore{
		cli:       cli,
		name:      name,
		keyLayout: keysOf(name),
		cfg:       cfg,
		mine:      make(map[string]*request),
	}
	s.q.init(s)
	if n := len(s.prefix) - 1; n > MaxNameLen {
		return nil, s.fail(opCall("new"), nil, fmt.Sprintf("the name takes %d bytes in its keys, more than MaxNameLen (%d): %v",
			n, MaxNameLen, rpctypes.ErrRequestTooLarge), rpctypes.ErrRequestTooLarge)
	}
	if cfg.hasCap {
		_, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.Version(s.capKey), "=", 0)).
			Then(clientv3.OpPut(s.capKey, formatUnits(cfg.capacity))).Commit()
		if err != nil {
			return nil, s.rpcFailed(opCall("create"), err)
		}
	}
	resp, err := cli.Get(ctx, s.prefix, s.stateRange())
	if err != nil {
		return nil, s.rpcFailed(opCall("read state"), err)
	}
	s.loadState(ctx, resp)
	wctx, cancel := context.WithCancel(context.Background())
	s.stopWatch, s.bgCtx = cancel, wctx
	s.wg.Add(1)
	go s.watch(wctx)
	if cfg.blockSize > 0 {
		s.blocks = newBlockPool(s, cfg.blockSize)
	}
	return s, nil
}

// loadState sets the mirror from a read of every key. A queue key present then
// may be a holder kept by a shrinking Resize or a waiter: only the history can
// tell, so loadState replays it from just before the oldest queue key was
// created, through the rule. If that history is compacted, keys that do not fit
// are counted but their state stays unknown (see queue).
func (s *Semaphore) loadState(ctx context.Context, now *clientv3.GetResponse) {
	oldest := int64(0)
	for _, kv := range now.Kvs {
		if strings.HasPrefix(string(kv.Key), s.qprefix) && (oldest == 0 || kv.CreateRevision < oldest) {
			oldest = kv.CreateRevision
		}
	}
	if oldest > 1 {
		base, err := s.cli.Get(ctx, s.prefix, s.stateRange(), clientv3.WithRev(oldest-1))
		if err == nil {
			s.q.load(oldest-1, base.Kvs)
			err = replay(ctx, s.cli, s.keyLayout, oldest, now.Header.Revision, s.q.applyEvents)
			if err == nil {
				s.q.advance(now.Header.Revision)
				return
			}
		}
		s.q = queue{}
		s.q.init(s) // compacted or failed: start again from the current state
	}
	s.q.load(now.Header.Revision, now.Kvs)
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Close gives back every unit this handle holds (by revoking its lease), ends
// every call of the handle in flight (its waiters, and calls waiting on etcd)
// with ErrClosed and stops its watch. Closing is final: Release and
// Return of the handle's units return nil afterwards (Close gave them back; they
// are not lost, and Lost does not close), Close returns nil, and every other
// call fails with ErrClosed. Close waits at most the lease TTL for etcd; if etcd
// cannot be reached the units come back when the lease expires.
func (s *Semaphore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	l := s.lease
	s.lease = nil
	for key, r := range s.mine {
		switch r.state {
		case stateWaiting:
			r.finish(stateFailed, s.closedError(acquireCall(r.n)))
		case stateHeld, stateReleasing:
			// Settled here, before the revocation deletes the keys: the watch
			// would otherwise report the deletions as losses. The error is for
			// an Acquire granted just now that has not returned yet.
			r.state, r.err = stateClosed, s.closedError(acquireCall(r.n))
		}
		delete(s.mine, key)
	}
	s.mu.Unlock()
	s.stopWatch() // ends every call in flight (see callContext)
	var err error
	if l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
		err = l.close(ctx, s.cli)
		cancel()
	}
	s.wg.Wait()
	if err != nil {
		return s.fail(opCall("close"), nil, "revoke lease: "+err.Error(), err)
	}
	return nil
}

// errIfClosed returns the error of c wrapping ErrClosed if the handle is
// closed. A call that passed it before Close is ended by Close (see
// callContext), but a write it sent may still land: the handle's state does
// not guard etcd's.
func (s *Semaphore) errIfClosed(c call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.closedError(c)
	}
	return nil
}

// callContext returns a context for the RPCs and waits of one call on ctx: it
// ends with ctx, and when the handle closes, with the cause ErrClosed, so that
// Close ends every call in flight. stop releases it when the call returns.
func (s *Semaphore) callContext(ctx context.Context) (cctx context.Context, stop func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(s.bgCtx, func() { cancel(ErrClosed) })
	return cctx, func() {
		unhook()
		cancel(nil)
	}
}

// currentLease returns the handle's lease, granting a new one if there is
// none. The grant runs outside mu, so that no other call waits on it: one
// caller grants while the others that need the lease wait for that grant, each
// for as long as its own ctx lets it, and take over if it fails.
func (s *Semaphore) currentLease(ctx context.Context) (*lease, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
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

		l, err := grantLease(ctx, s.cli, s.cfg.ttl, s.cfg.margin, s.leaseLost)
		s.mu.Lock()
		s.granting = nil
		close(done)
		switch {
		case err != nil:
			s.mu.Unlock()
			return nil, err
		case s.closed:
			// Close did not see this lease: give it up here.
			s.mu.Unlock()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.attemptTimeout())
			_ = l.close(rctx, s.cli)
			cancel()
			return nil, ErrClosed
		case l.err() != nil:
			s.mu.Unlock() // lost already: the grant took longer than the TTL less the margin
			continue
		}
		s.lease = l
		s.mu.Unlock()
		return l, nil
	}
}

// leaseLost runs once when l is lost: every request on it fails, every holder
// on it is told.
func (s *Semaphore) leaseLost(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == l {
		s.lease = nil
	}
	cause := l.err()
	for key, r := range s.mine {
		if r.lease != l {
			continue
		}
		switch r.state {
		case stateWaiting:
			r.finish(stateFailed, s.fail(acquireCall(r.n), nil, cause.Error(), cause))
		case stateHeld, stateReleasing:
			r.markLost(cause)
		}
		delete(s.mine, key)
	}
}

// formatUnits writes a capacity so that etcd's byte-wise comparison of values
// orders capacities as numbers (a transaction compares cap >= n).
func formatUnits(n int64) string { return fmt.Sprintf("%020d", n) }

// checkUnits panics on a negative or oversized count: a programmer error.
func checkUnits(op, what string, n int64) {
	if n < 0 || n > semaphore.MaxUnits {
		panic(fmt.Sprintf("etcdsem: %s: %s %d out of range [0, %d]", op, what, n, int64(semaphore.MaxUnits)))
	}
}
