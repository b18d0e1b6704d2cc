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

// A Set is a family of semaphores in etcd, one per key, each with the
// capacity capacityOf(key): a per-tenant limit across processes ("tenant X
// runs at most 10 jobs at once, fleet-wide") for any number of tenants. Each
// key's semaphore keeps the contract of a Semaphore in plain mode: strict FIFO
// across every process, the bound exact at every revision, Units tied to the
// lease with Lost, Err and a fencing token.
//
// A Set holds one lease and one watch (over every key of the Set) for all its
// keys, however many. A key exists in etcd while somebody waits for or holds
// its units, and in a process's memory while a call of that process uses it
// or its units are held there, and for at most two seconds after: nothing of
// an idle key is kept anywhere, so keys may be as many as tenants ever were.
//
// A key's semaphore has no capacity record in etcd: every process must give
// the same capacity for a key (capacityOf is configuration, like the name);
// two processes that disagree each apply their own, and the bound is then the
// larger. There is no Resize or Break of one key, and no block mode (a block
// per key and process would keep units idle across thousands of keys).
//
// It is safe for concurrent use. Close it when done: that gives back every
// unit it holds.
type Set struct {
	// fixed at creation
	sess       *session
	name       string
	prefix     string // setPrefix(name): every key of the Set starts with it
	end        string // the end of the Set's range: the first key after every key of it
	capacityOf func(key string) int64
	clientTag  string

	mu   sync.Mutex
	keys map[string]*setKey // guarded by mu: the keys in memory, by their prefix
	peak int                // guarded by mu: the most keys the map held since it was made
	rev  int64              // guarded by mu: the last revision the watch delivered
}

// A setKey is one key of a Set in this process's memory: the handle of its
// semaphore, and what keeps it there.
type setKey struct {
	h     *handle
	ready chan struct{} // closed once loaded (err nil) or failed to load (err set)
	err   error         // written before ready closes

	users int // guarded by Set.mu: calls in flight on the key
	idle  int // guarded by Set.mu: sweeps in a row that found the key idle

	// guarded by h.mu
	loaded  bool              // the handle's mirror is loaded and the watch applies to it
	stale   bool              // the watch lost history while the key loaded: load again
	dropped bool              // out of the Set's map: the watch no longer applies to it
	pending []*clientv3.Event // the watch's events for the key while it loads
}

// NewSet returns a Set named name, whose key k's semaphore has the capacity
// capacityOf(k). It reads etcd's current revision with ctx and starts the
// Set's watch there. The options WithTTL, WithSafetyMargin and WithClientName
// apply as to New. It panics if cli or capacityOf is nil, if name is empty, or
// with WithCapacity or WithBlocks, which do not apply to a Set.
//
// The keys of the Set's key k start with KeyPrefix(name)+"k/"+escape(k)+"/",
// laid out as a semaphore's (see Keys), apart from every semaphore's keys,
// the semaphore called name's included.
func NewSet(ctx context.Context, cli *clientv3.Client, name string, capacityOf func(key string) int64, opts ...Option) (*Set, error) {
	switch {
	case cli == nil:
		panic(fmt.Sprintf("etcdsem: NewSet(%q): nil client", name))
	case name == "":
		panic(`etcdsem: NewSet(""): the name must not be empty`)
	case capacityOf == nil:
		panic(fmt.Sprintf("etcdsem: NewSet(%q): nil capacity function", name))
	}
	host, _ := os.Hostname()
	cfg := config{ttl: 10 * time.Second, margin: -1, clientTag: host + ":" + strconv.Itoa(os.Getpid())}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.hasCap || cfg.blockSize > 0 {
		panic(fmt.Sprintf("etcdsem: NewSet(%q): WithCapacity and WithBlocks do not apply to a Set", name))
	}
	if cfg.margin < 0 {
		cfg.margin = max(cfg.ttl/10, 500*time.Millisecond)
	}
	sp := setPrefix(name)
	s := &Set{name: name, prefix: sp, end: clientv3.GetPrefixRangeEnd(sp), capacityOf: capacityOf,
		clientTag: cfg.clientTag, keys: make(map[string]*setKey)}
	s.sess = newSession(cli, cfg, s.leaseLost)
	resp, err := cli.Get(ctx, sp, clientv3.WithRange(s.end), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("etcdsem set %q: read the revision: %w", name, err)
	}
	s.rev = resp.Header.Revision
	s.sess.watch(sp, s.end, s)
	s.sess.spawn(s.sweep)
	return s, nil
}

// Name returns the Set's name.
func (s *Set) Name() string { return s.name }

// Acquire takes n units of key's semaphore, waiting in FIFO order behind every
// earlier acquire of that key by any process, and returns them as Units tied
// to the Set's lease. Its contract is Semaphore.Acquire's, for one key: it
// fails with semaphore.ErrTooLarge, before any RPC, when n exceeds
// capacityOf(key); with ErrLost, ErrClosed, ctx's error (and ErrTimedOut for
// a deadline) as a Semaphore's; and with an error matching
// rpctypes.ErrRequestTooLarge, before any RPC, when the key's prefix is
// longer than MaxNameLen. Its errors name the key's semaphore "NAME/KEY".
// It panics if n is negative or above semaphore.MaxUnits, or if capacityOf
// returns a capacity out of that range.
func (s *Set) Acquire(ctx context.Context, key string, n int64) (*Units, error) {
	k, err := s.pin(ctx, key, "Acquire", n, acquireCall(n))
	if err != nil {
		return nil, err
	}
	defer s.unpin(k)
	return k.h.acquire(ctx, n)
}

// AcquireTimeout is Acquire with a deadline d from now. On expiry it returns
// an error matching semaphore.ErrTimedOut and context.DeadlineExceeded. If
// d <= 0 it does not wait: it succeeds when TryAcquire would, and otherwise
// returns the timeout error.
func (s *Set) AcquireTimeout(ctx context.Context, key string, d time.Duration, n int64) (*Units, error) {
	if d <= 0 {
		u, ok, err := s.TryAcquire(ctx, key, n)
		if err != nil || ok {
			return u, err
		}
		return nil, s.fail(key, acquireCall(n), semaphore.TimedOut, "timed out after "+d.String()+": "+context.DeadlineExceeded.Error(),
			semaphore.ErrTimedOut, context.DeadlineExceeded)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return s.Acquire(ctx, key, n)
}

// TryAcquire takes n units of key's semaphore if they are free and nobody
// waits for that key, and reports whether it did. Its contract is
// Semaphore.TryAcquire's in plain mode, for one key; it fails as Acquire does
// before any RPC.
func (s *Set) TryAcquire(ctx context.Context, key string, n int64) (*Units, bool, error) {
	k, err := s.pin(ctx, key, "TryAcquire", n, tryCall(n))
	if err != nil {
		return nil, false, err
	}
	defer s.unpin(k)
	return k.h.tryAcquire(ctx, n)
}

// Keys returns the number of keys this process keeps in memory: those its
// calls use or whose units it holds, and those idle for less than two
// seconds.
func (s *Set) Keys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// Close gives back every unit the Set holds (by revoking its lease), ends
// every call in flight with ErrClosed and stops its watch, as Semaphore.Close
// does for every key at once.
func (s *Set) Close() error {
	l, first := s.sess.startClose()
	if !first {
		return nil
	}
	for _, k := range s.snapshot() {
		k.h.closeRequests()
	}
	if err := s.sess.finishClose(l); err != nil {
		return fmt.Errorf("etcdsem set %q: close: revoke lease: %w", s.name, err)
	}
	return nil
}

// pin returns key's setKey, loaded, counting the call in its users so that it
// stays in memory until unpin. The first call on a key not in memory enters
// it in the map before it reads the key's state, so that the watch buffers
// every event after that read (see apply); other calls wait for that load.
func (s *Set) pin(ctx context.Context, key, op string, n int64, c call) (*setKey, error) {
	start := time.Now()
	checkUnits("Set."+op, "units", n)
	kp := setKeysOf(s.prefix, key)
	if len(kp.prefix)-1 > MaxNameLen {
		h := s.newHandle(key, kp, 0)
		return nil, h.fail(c, nil, fmt.Sprintf("the key takes %d bytes in its keys, more than MaxNameLen (%d): %v",
			len(kp.prefix)-1, MaxNameLen, rpctypes.ErrRequestTooLarge), rpctypes.ErrRequestTooLarge)
	}
	for {
		s.mu.Lock()
		if s.sess.closed.Load() {
			s.mu.Unlock()
			return nil, s.newHandle(key, kp, 0).closedError(c)
		}
		k := s.keys[kp.prefix]
		first := k == nil
		if first {
			capacity := s.capacityOf(key)
			if capacity < 0 || capacity > semaphore.MaxUnits {
				s.mu.Unlock()
				panic(fmt.Sprintf("etcdsem set %q: capacityOf(%q) = %d out of range [0, %d]", s.name, key, capacity, int64(semaphore.MaxUnits)))
			}
			k = &setKey{h: s.newHandle(key, kp, capacity), ready: make(chan struct{})}
			s.keys[kp.prefix] = k
		}
		k.users++
		k.idle = 0
		s.peak = max(s.peak, len(s.keys))
		s.mu.Unlock()
		if first {
			s.load(ctx, k)
		}
		select {
		case <-k.ready:
		case <-ctx.Done():
			s.unpin(k)
			return nil, k.h.waitError(ctx, c, start)
		}
		switch {
		case k.err == nil:
			if n > k.h.capacity {
				s.unpin(k)
				return nil, k.h.tooLargeError(c, k.h.capacity)
			}
			return k, nil
		case ctx.Err() != nil:
			s.unpin(k)
			return nil, k.h.waitError(ctx, c, start)
		case s.sess.closed.Load():
			s.unpin(k)
			return nil, k.h.closedError(c)
		case first:
			s.unpin(k)
			return nil, k.h.rpcFailed(c, k.err)
		}
		s.unpin(k) // the caller that loaded it left or failed: load it again
	}
}

// unpin ends a call's use of k.
func (s *Set) unpin(k *setKey) {
	s.mu.Lock()
	k.users--
	s.mu.Unlock()
}

// newHandle returns the handle of key's semaphore on the Set's session.
func (s *Set) newHandle(key string, kl keyLayout, capacity int64) *handle {
	h := &handle{sess: s.sess, name: s.name + "/" + key, keyLayout: kl, clientTag: s.clientTag, seq: &s.sess.seq,
		capFixed: true, capacity: capacity, mine: make(map[string]*request)}
	h.q.init(h)
	return h
}

// load reads k's state and hands it to the watch: the events the watch
// buffered meanwhile are applied after the read's revision (applyEvents skips
// those at or before it), and from then on the watch applies them as they
// come. If the watch lost history while it read (a compaction: see resync),
// it reads again. On failure k leaves the map, and ready closes with the
// error.
func (s *Set) load(ctx context.Context, k *setKey) {
	h := k.h
	cctx, stop := s.sess.callContext(ctx)
	defer stop()
	for {
		h.mu.Lock()
		k.stale, k.pending = false, nil
		h.mu.Unlock()
		resp, err := s.sess.cli.Get(cctx, h.prefix, h.stateRange())
		if err != nil {
			s.mu.Lock()
			if s.keys[h.prefix] == k {
				delete(s.keys, h.prefix)
			}
			s.mu.Unlock()
			h.mu.Lock()
			k.dropped = true
			h.mu.Unlock()
			k.err = err
			close(k.ready)
			return
		}
		// Until loaded, only this goroutine touches h.q: the watch buffers.
		h.q = queue{}
		h.q.init(h)
		h.loadState(cctx, resp)
		h.mu.Lock()
		if k.stale {
			h.mu.Unlock()
			continue
		}
		h.q.applyEvents(k.pending)
		k.pending, k.loaded = nil, true
		h.mu.Unlock()
		close(k.ready)
		return
	}
}

// next, apply and resync make the Set the mirror of its one watch, which
// hands each key's events to the key's handle.

func (s *Set) next() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev + 1
}

// apply hands each key in memory its events of resp, in order: all its
// events of each revision, which a key's state depends on alone (a revision
// may touch several keys: a lease's expiry deletes all its keys). Events of
// keys not in memory are dropped: a key entered later reads its state after
// them. A progress notification moves every key to its revision.
func (s *Set) apply(resp clientv3.WatchResponse) {
	type batch struct {
		k   *setKey
		evs []*clientv3.Event
	}
	var batches []batch
	at := map[*setKey]int{}
	s.mu.Lock()
	for _, ev := range resp.Events {
		s.rev = max(s.rev, ev.Kv.ModRevision)
		k := s.keys[s.keyPrefixOf(ev.Kv.Key)]
		if k == nil {
			s.orphan(ev)
			continue
		}
		if strings.HasPrefix(string(ev.Kv.Key), k.h.rprefix) {
			continue
		}
		i, ok := at[k]
		if !ok {
			i = len(batches)
			at[k] = i
			batches = append(batches, batch{k: k})
		}
		batches[i].evs = append(batches[i].evs, ev)
	}
	var all []*setKey
	if resp.IsProgressNotify() {
		s.rev = max(s.rev, resp.Header.Revision)
		all = s.snapshotLocked()
	}
	s.mu.Unlock()
	for _, b := range batches {
		b.k.deliver(b.evs)
	}
	for _, k := range all {
		k.h.mu.Lock()
		if k.loaded && !k.dropped {
			k.h.q.advance(resp.Header.Revision)
		}
		k.h.mu.Unlock()
	}
}

// orphan deletes the key of ev if it is a queue key this Set wrote on its
// current lease for a key not in memory: no request of the Set owns it (a
// key's requests keep it in memory until their keys are gone), so it is a
// write whose caller gave up before its reply, landing late. Left alone it
// would hold units for as long as the lease lives.
func (s *Set) orphan(ev *clientv3.Event) {
	if ev.Type != clientv3.EventTypePut || ev.Kv.CreateRevision != ev.Kv.ModRevision {
		return
	}
	l := s.sess.current()
	if l == nil || ev.Kv.Lease != int64(l.id) || !strings.Contains(string(ev.Kv.Key[len(s.prefix):]), "/q/") {
		return
	}
	s.sess.deleteLater(string(ev.Kv.Key), ev.Kv.CreateRevision)
}

// deliver applies the watch's events of k to its handle, or keeps them
// until it is loaded. A key dropped from memory applies nothing: the watch
// may have found it just before, and a key of the same name entered since
// reads its own state.
func (k *setKey) deliver(evs []*clientv3.Event) {
	k.h.mu.Lock()
	defer k.h.mu.Unlock()
	switch {
	case k.dropped:
	case !k.loaded:
		k.pending = append(k.pending, evs...)
	default:
		k.h.q.applyEvents(evs)
	}
}

// keyPrefixOf returns the prefix of the key's semaphore that the etcd key
// belongs to: up to the first "/" after the Set's prefix (see setKeysOf).
func (s *Set) keyPrefixOf(etcdKey []byte) string {
	rest := etcdKey[len(s.prefix):]
	for i, b := range rest {
		if b == '/' {
			return string(etcdKey[:len(s.prefix)+i+1])
		}
	}
	return ""
}

// resync re-reads every key in memory after the history the watch needed
// was compacted (see handle.resync for what that means to their callers). A
// key still loading reads again. The watch then goes on from the revision
// read first, which every key's state is at or after.
func (s *Set) resync(ctx context.Context) bool {
	resp, err := s.sess.cli.Get(ctx, s.prefix, clientv3.WithRange(s.end), clientv3.WithCountOnly())
	if err != nil {
		return false
	}
	for _, k := range s.snapshot() {
		k.h.mu.Lock()
		if !k.loaded {
			k.stale, k.pending = true, nil
		}
		loaded := k.loaded && !k.dropped
		k.h.mu.Unlock()
		if loaded && !k.h.resync(ctx) {
			return false
		}
	}
	s.mu.Lock()
	s.rev = max(s.rev, resp.Header.Revision)
	s.mu.Unlock()
	return true
}

// leaseLost tells every key in memory that the Set's lease l was lost.
func (s *Set) leaseLost(l *lease) {
	for _, k := range s.snapshot() {
		k.h.leaseLost(l)
	}
}

func (s *Set) snapshot() []*setKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked()
}

func (s *Set) snapshotLocked() []*setKey {
	all := make([]*setKey, 0, len(s.keys))
	for _, k := range s.keys {
		all = append(all, k)
	}
	return all
}

// idlePause is the period of the sweep that drops idle keys from memory: a
// key is dropped by the second sweep in a row that finds it idle. Tests
// shorten it.
var idlePause = time.Second

// sweep drops the keys that are idle, twice in a row, from memory until the
// session closes. A key is idle when no call uses it and this process has no
// key of it in etcd (held, waiting, or being deleted): nothing would be told
// to anyone through it. Keeping a key one sweep longer spares a busy key a
// read of its state each time its units come and go.
func (s *Set) sweep() {
	t := time.NewTicker(idlePause)
	defer t.Stop()
	for {
		select {
		case <-s.sess.ctx.Done():
			return
		case <-t.C:
		}
		s.sweepIdle()
	}
}

// sweepIdle is one sweep: it drops the keys found idle by the sweep before
// and this one.
func (s *Set) sweepIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, k := range s.keys {
		if k.users > 0 {
			continue
		}
		k.h.mu.Lock()
		idle := k.loaded && len(k.h.mine) == 0
		if idle && k.idle >= 1 {
			k.dropped = true
			delete(s.keys, p)
		}
		k.h.mu.Unlock()
		if idle {
			k.idle++
		} else {
			k.idle = 0
		}
	}
	// A map keeps the room of the most keys it held: once it holds far
	// fewer, a new one frees that room.
	if len(s.keys) <= s.peak/4 {
		keys := make(map[string]*setKey, len(s.keys))
		for p, k := range s.keys {
			keys[p] = k
		}
		s.keys, s.peak = keys, len(keys)
	}
}

// fail is the error of call c on key, before its handle exists.
func (s *Set) fail(key string, c call, o any, why string, matches ...error) error {
	return s.newHandle(key, setKeysOf(s.prefix, key), 0).fail(c, o, why, matches...)
}
