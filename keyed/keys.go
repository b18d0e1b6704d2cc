package keyed

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/fairsem/semaphore"
)

// The active keys live in shardCount maps, each under its own read-write lock,
// chosen by a hash of the key. A call on a key that is already active finds its
// entry under the shard's read lock and takes its reference there; only a key
// becoming active or inactive takes the shard's write lock. No call of the set
// takes the set's mutex for that.
//
// # The reference protocol
//
// An entry's refs counts the calls in progress on its key and its Units not yet
// released. The entry is in its shard's map exactly while refs > 0:
//
//   - refs goes from 0 to 1 only under the shard's write lock, in the same hold
//     that puts the entry in the map (activate).
//   - A call that finds the entry in the map takes a reference under the read
//     lock (join). Removal needs the write lock, so the entry it found stays in
//     the map, with refs >= 1, until the read lock is released: its increment
//     never revives a removed entry.
//   - A reference is dropped without a lock only while others remain: leave
//     swaps refs from r to r-1 for r >= 2. The last one is dropped under the
//     write lock, which removes the entry in the same hold when refs reaches 0.
//     No reader holds the lock then, so no reference can be taken between the
//     drop and the removal; and a reader that took one before makes the drop
//     leave 1, and the entry stays.
//
// So the entry a call holds a reference to is in the map, serving the call's key,
// until that reference is dropped; an entry is reused for another key (free)
// only after removal, when nobody can hold a reference to it.

// shardCount is the number of shards: enough that keys active on different
// cores rarely share a lock word, few enough that an empty set stays small.
const shardCount = 32

// A shard's index fits in a byte, which Units keeps in its padding.
const _ = uint8(shardCount - 1)

// A shard is one map of active keys and the idle entries kept for reuse.
type shard struct {
	mu sync.RWMutex
	// m holds the shard's active keys. Guarded by mu: read under the read lock,
	// changed under the write lock.
	m map[string]*entry
	// peak is the most entries m has held since it was made. Go maps do not
	// shrink, so m is rebuilt when it falls to a small fraction of its peak (see
	// remove). Guarded by mu (write lock).
	peak int
	// free keeps up to maxFree idle entries, with their semaphores, for keys that
	// become active: a stream of short-lived keys then allocates nothing per key.
	// Guarded by mu (write lock).
	free []*entry
	// acquired counts the successful acquisitions of the shard's keys. Atomic.
	acquired atomic.Uint64
}

const (
	// maxFree bounds the idle entries kept for reuse in each shard.
	maxFree = 2
	// rebuildAbove is the peak below which a shard's map is never rebuilt: a map
	// this small costs little even when empty.
	rebuildAbove = 1024 / shardCount
)

// An entry is one active key: its semaphore and who uses it.
type entry struct {
	sem *semaphore.Semaphore // fixed: the key's limit, idle and healthy whenever refs is 0
	// key is set under the shard's write lock when the entry enters the map;
	// calls read it while they hold a reference (see the protocol above).
	key  string
	refs atomic.Int32 // see the protocol above
	// waiting is the calls in progress not yet granted at every level. Atomic:
	// read for Stats and Diagnostics.
	waiting atomic.Int32
	// held is the units held by the key's Units and, with WithLimit, granted at
	// the limit to calls that have not returned yet. Atomic: changed outside every
	// lock; read by the limit's choice of who goes next (limit.go), by Stats and
	// by Diagnostics.
	held atomic.Int64
	// share is the key's part in the set's limit; nil without WithLimit.
	share *share
}

// shardOf returns the index of key's shard. A call computes it once, in join,
// and its Units keeps it for Release.
func (s *Set) shardOf(key string) uint8 {
	return uint8(maphash.String(s.seed, key) % shardCount)
}

// join takes a reference to key's entry, making the key active if it is not,
// for a call asking for n units, and returns it with its shard's index. On a
// broken set it takes nothing and returns the semaphore that fails such calls.
func (s *Set) join(key string, n int64) (*entry, uint8, *semaphore.Semaphore) {
	if s.label == "" {
		panic(errZeroSet)
	}
	if n < 0 {
		s.panicf("acquire %d units for key %q: negative", n, key)
	}
	i := s.shardOf(key)
	sh := &s.shards[i]
	sh.mu.RLock()
	e := sh.m[key]
	if e != nil {
		e.refs.Add(1) // under the read lock: e stays in the map (see the protocol)
	}
	sh.mu.RUnlock()
	if e == nil {
		var b *semaphore.Semaphore
		if e, b = s.joinSlow(sh, key); b != nil {
			return nil, 0, b
		}
	}
	e.waiting.Add(1)
	return e, i, nil
}

// joinSlow is join for a key that was not active when join looked.
func (s *Set) joinSlow(sh *shard, key string) (*entry, *semaphore.Semaphore) {
	if b := s.broken.Load(); b != nil {
		return nil, b
	}
	// The functions are the caller's: they run without a lock. Another call may
	// make the key active meanwhile; its parameters are then the ones used.
	p := s.paramsFor(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Break stores broken before it breaks the keys of each shard under the
	// shard's write lock: a key made active after that sees it here.
	if b := s.broken.Load(); b != nil {
		return nil, b
	}
	e := sh.m[key]
	if e == nil {
		e = s.activate(sh, key, p)
	}
	e.refs.Add(1)
	return e, nil
}

// params are what the options say about one key.
type params struct {
	capacity, weight, guarantee int64
}

// paramsFor calls the functions of WithCapacityFunc, WithWeightFunc and
// WithGuaranteeFunc for key, and checks their results.
func (s *Set) paramsFor(key string) params {
	p := params{capacity: s.capacity, weight: 1}
	if s.capacityOf != nil {
		c := s.capacityOf(key)
		if c < 0 {
			s.panicf("capacity %d for key %q: negative", c, key)
		}
		p.capacity = min(c, semaphore.MaxUnits)
	}
	if s.weightOf != nil {
		p.weight = s.weightOf(key)
		if p.weight < 1 || p.weight > MaxWeight {
			s.panicf("weight %d for key %q: must be between 1 and %d", p.weight, key, MaxWeight)
		}
	}
	if s.guaranteeOf != nil {
		p.guarantee = s.guaranteeOf(key)
		if p.guarantee < 0 {
			s.panicf("guarantee %d for key %q: negative", p.guarantee, key)
		}
		p.guarantee = min(p.guarantee, p.capacity)
	}
	return p
}

// activate makes key active with parameters p, reusing an idle entry when one
// is kept. sh.mu must be held for writing.
func (s *Set) activate(sh *shard, key string, p params) *entry {
	var e *entry
	if k := len(sh.free); k > 0 {
		e = sh.free[k-1]
		sh.free[k-1] = nil
		sh.free = sh.free[:k-1]
		if e.sem.Capacity() != p.capacity {
			e.sem.Resize(p.capacity) // idle: no holder, no waiter to fail
		}
	} else {
		e = &entry{}
		opts := s.keyOpts
		if s.observer != nil {
			opts = append(opts[:len(opts):len(opts)], semaphore.WithObserver(&keyObserver{s, e}))
		}
		e.sem = semaphore.New(p.capacity, opts...)
		if s.limit != nil {
			e.share = &share{}
		}
	}
	e.key = key
	if e.share != nil {
		e.share.weight, e.share.guarantee, e.share.fresh = p.weight, p.guarantee, true
		e.share.granted.Store(0)
		s.weights.Add(p.weight)
	}
	if sh.m == nil {
		sh.m = make(map[string]*entry)
	}
	sh.m[key] = e
	sh.peak = max(sh.peak, len(sh.m))
	s.active.Add(1)
	return e
}

// leave drops one reference to e, in shard i, and makes the key inactive with
// the last one.
func (s *Set) leave(e *entry, i uint8) {
	for {
		r := e.refs.Load()
		if r <= 1 {
			break
		}
		if e.refs.CompareAndSwap(r, r-1) {
			return // not the last: others hold the entry in the map
		}
	}
	// Perhaps the last: drop it under the write lock (see the protocol).
	sh := &s.shards[i]
	sh.mu.Lock()
	if e.refs.Add(-1) == 0 {
		s.remove(sh, e)
	}
	sh.mu.Unlock()
}

// remove takes e, which has no reference left, out of its shard's map; it keeps
// it for reuse when its semaphore is idle and healthy. sh.mu must be held for
// writing.
func (s *Set) remove(sh *shard, e *entry) {
	delete(sh.m, e.key)
	if e.share != nil {
		s.weights.Add(-e.share.weight)
	}
	if s.broken.Load() == nil && len(sh.free) < maxFree && e.sem.Waiters() == 0 && e.sem.Available() == e.sem.Capacity() {
		e.key = ""
		sh.free = append(sh.free, e)
	}
	// Go maps never give back the memory of deleted entries: rebuild the map
	// when it is down to an eighth of its peak. The copy costs at most an eighth
	// of the deletions since the last rebuild, so O(1) per deletion amortized.
	if k := len(sh.m); sh.peak > rebuildAbove && k <= sh.peak/8 {
		m := make(map[string]*entry, k)
		for key, e := range sh.m {
			m[key] = e
		}
		sh.m, sh.peak = m, k
	}
	// The Dekker pair with Drain: see drainedLocked.
	if s.active.Add(-1) == 0 && s.draining.Load() > 0 {
		s.mu.Lock()
		s.drainedLocked()
		s.mu.Unlock()
	}
}

// eachEntry calls f for every active key, under its shard's read lock, one
// shard at a time: f must be quick and must not call the set.
func (s *Set) eachEntry(f func(*entry)) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for _, e := range sh.m {
			f(e)
		}
		sh.mu.RUnlock()
	}
}
