package keyed

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/fairsem/semaphore"
)

// The active keys live in shardCount tables, chosen by a hash of the key (see
// table.go). A call finds its key's entry without a lock and takes a reference
// with one compare-and-swap on the entry; only a key becoming active or
// inactive takes its shard's mutex. Nothing a call on an active key writes is
// shared with another key: its entry, its semaphore and its view of the second
// level (level.go), whose own words a second level that binds shares.
//
// # The reference protocol
//
// An entry's refs counts the calls in progress on its key and the Units not
// yet released. An entry serves one key at a time: it is in its shard's table,
// serving its key, exactly while refs > 0, and with its semaphore it is kept
// for another key once refs reaches 0.
//
//   - refs goes from 0 to 1 only in activate, under the shard's mutex, after
//     the entry's key and hash are set and before it is put in the table.
//   - A call that finds an entry without the lock takes a reference by a
//     compare-and-swap from r > 0 to r+1 (ref), and then checks the entry's
//     hash and key: the entry may have become another key's since the call
//     loaded it. The key is read only under that reference, while nobody can
//     change it. A swap that finds 0 fails: the entry is not in the table, and
//     the call looks further, then goes to the mutex (joinSlow).
//   - Under the mutex every entry in the table has refs >= 1: the last
//     reference is dropped under the mutex, which takes the entry out of the
//     table in the same hold (leave). Any other reference is dropped by a
//     compare-and-swap from r >= 2 to r-1, so refs reaches 0 only under the
//     mutex.
//
// So an entry a call holds a reference to is in the table, serving the call's
// key, until the reference is dropped; and an entry changes keys only while
// nobody holds one. A reader that loaded an entry before it changed keys sees
// a hash that differs, or refs at 0, or, if it took a reference just as the
// entry became another key's, a key that differs: it drops the reference it
// took (a reference of that other key's, by the rules above) and looks on.

// shardCount is the number of shards: keys that become active on different
// cores rarely share a mutex, and an empty set stays small.
const shardCount = 32

// maxFree bounds the idle entries a shard keeps for keys that become active.
const maxFree = 2

// A shard is one table of active keys and what is counted per shard.
type shard struct {
	// mu is taken to change the table, to make a key active or inactive, and
	// by the readings, which read each entry of the shard under it.
	mu    sync.Mutex
	table atomic.Pointer[table] // read without a lock; replaced under mu
	// live counts the table's entries, used its entries and tombstones (see
	// table.go). Guarded by mu.
	live, used int
	// free[:nfree] keeps idle entries, with their semaphores and views, for
	// keys that become active: a stream of short-lived keys then allocates
	// nothing per key. In the shard itself, so that no other shard's calls
	// write its cache line. Guarded by mu.
	free  [maxFree]*entry
	nfree int

	// Atomic; changed under mu, read without it.
	active  atomic.Int64 // keys in the table
	weights atomic.Int64 // the sum of their weights, with WithLimit
	// retired is the calls granted to keys while their entries were in the
	// table, for the entries that left it since. Guarded by mu.
	retired uint64

	// Atomic: the calls of the shard's keys that failed, by outcome (Stats).
	timedOut, cancelled, rejected atomic.Uint64

	// A cache line less one word: no line holds words of two shards, wherever
	// the array starts.
	_ [56]byte
}

// An entry is one active key, or an idle one kept for another key. It holds
// its key's semaphore, so that the two are one allocation of 128 bytes, which
// the allocator places on a 128-byte boundary; what a call on the key writes
// (refs, acquired, the semaphore's state word) and reads (hash, key, second,
// the semaphore's capacity) is in its first 64 bytes, one cache line
// (TestEntryLayout).
type entry struct {
	refs atomic.Int32 // see the protocol above

	// Set when the entry becomes a key's, under the shard's mutex, while refs
	// is 0 (see the protocol), and read only under a reference or under the
	// mutex: a probe compares its slot's copy of hash (table.go) before it
	// takes one. hash is beside refs, so that the entry is 128 bytes.
	hash atomic.Uint32
	key  string

	// acquired counts the key's calls granted since the entry became its key's:
	// added to with atomic.AddUint64 by the calls, read atomically, and moved
	// to its shard's retired under the mutex once refs is 0, when no call adds
	// to it.
	acquired uint64

	// Fixed for the entry's life.
	second level               // the key's view of the second level; nil: none (see level.go)
	sem    semaphore.Semaphore // the key's level (semaphore.Semaphore.Init)
}

// ref takes a reference to e unless refs is 0 (see the protocol).
func (e *entry) ref() bool {
	for {
		r := e.refs.Load()
		if r <= 0 {
			return false
		}
		if e.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// hashOf returns key's hash: 32 bits, which choose its shard (the low bits)
// and its home slot there (table.home), and which a reader compares before it
// takes a reference on an entry.
func (s *Set) hashOf(key string) uint32 {
	return uint32(maphash.String(s.seed, key))
}

// shardOf returns key's hash and its shard.
func (s *Set) shardOf(key string) (uint32, *shard) {
	h := s.hashOf(key)
	return h, &s.shards[h%shardCount]
}

// join takes a reference to key's entry, making the key active if it is not,
// for a call asking for n units. On a broken set it takes nothing and returns
// the semaphore that fails such calls. It is the first step of every acquire:
// its common case, a key already active found at its home slot, is written
// out here, and the rest is in lookup and joinSlow.
func (s *Set) join(key string, n int64) (*entry, *shard, *semaphore.Semaphore) {
	if s.label == "" || n < 0 {
		s.misuse(key, n)
	}
	h, sh := s.shardOf(key)
	t := sh.table.Load()
	i := t.home(h)
	if e := t.slots[i].e.Load(); e != nil && e != tombstone && t.slots[i].hash.Load() == h && s.refFor(e, h, key) {
		return e, sh, nil
	}
	if e := s.lookup(t, i, h, key); e != nil {
		return e, sh, nil
	}
	e, b := s.joinSlow(sh, h, key)
	return e, sh, b
}

// lookup returns key's entry, of hash h, with a reference taken, searching t
// from slot i, or nil if it found none without the lock. See the protocol.
func (s *Set) lookup(t *table, i int, h uint32, key string) *entry {
	n := len(t.slots)
	for probes := 0; probes < n; probes++ {
		e := t.slots[i].e.Load()
		if e == nil {
			return nil
		}
		if e != tombstone && t.slots[i].hash.Load() == h && s.refFor(e, h, key) {
			return e
		}
		if i++; i == n {
			i = 0
		}
	}
	return nil
}

// refFor takes a reference to e if e serves key, of hash h, and reports
// whether it did. It checks the key under the reference it took: e may have
// become another key's since the caller loaded it, and then the reference was
// that key's, and is dropped.
func (s *Set) refFor(e *entry, h uint32, key string) bool {
	if !e.ref() {
		return false
	}
	if e.hash.Load() == h && e.key == key {
		return true
	}
	s.leave(e)
	return false
}

// joinSlow is join for a key that was not active, or whose entry was leaving,
// when lookup looked.
func (s *Set) joinSlow(sh *shard, h uint32, key string) (*entry, *semaphore.Semaphore) {
	if b := s.broken.Load(); b != nil {
		return nil, b
	}
	// The functions are the caller's: they run without a lock. Another call may
	// make the key active meanwhile; its parameters are then the ones used.
	p := s.paramsFor(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Break stores broken before it breaks each shard's keys under the shard's
	// mutex: a key made active after that sees it here.
	if b := s.broken.Load(); b != nil {
		return nil, b
	}
	if e := sh.table.Load().find(h, key); e != nil {
		e.refs.Add(1) // under mu: refs >= 1 (see the protocol)
		return e, nil
	}
	return s.activate(sh, h, key, p), nil
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

// activate makes key, of hash h, active with parameters p and one reference,
// in an idle entry if the shard keeps one. sh.mu must be held.
func (s *Set) activate(sh *shard, h uint32, key string, p params) *entry {
	var e *entry
	if sh.nfree > 0 {
		sh.nfree--
		e = sh.free[sh.nfree]
		sh.free[sh.nfree] = nil
		if e.sem.Capacity() != p.capacity {
			e.sem.Resize(p.capacity) // idle: no holder, no waiter to fail
		}
	} else {
		e = s.newEntry(p.capacity)
	}
	e.key = key
	if e.hash.Load() != h {
		e.hash.Store(h) // a key made active again in its last entry keeps it
	}
	if f, ok := e.second.(*flow); ok {
		f.activate(p.weight, p.guarantee)
		sh.weights.Add(p.weight)
	}
	e.refs.Store(1)
	sh.insert(h, e)
	sh.active.Add(1)
	return e
}

// newEntry makes an idle entry with a semaphore of the given capacity and the
// set's view of its second level.
func (s *Set) newEntry(capacity int64) *entry {
	e := &entry{}
	opts := s.keyOpts
	if s.observer != nil {
		opts = append(opts[:len(opts):len(opts)], semaphore.WithObserver(&keyObserver{set: s, e: e}))
	}
	e.sem.Init(capacity, opts...)
	switch {
	case s.limit != nil:
		e.second = &flow{limit: s.limit}
	case s.global != nil:
		e.second = &globalView{sem: s.global}
	}
	return e
}

// leave drops one reference to e, and makes its key inactive with the last.
func (s *Set) leave(e *entry) {
	if !e.unref() {
		s.leaveSlow(e)
	}
}

// unref drops one reference to e if it is not the last, and reports whether
// it did: a swap from r >= 2 (see the protocol). Small enough to be inlined
// into Units.Release.
func (e *entry) unref() bool {
	r := e.refs.Load()
	return r > 1 && e.refs.CompareAndSwap(r, r-1)
}

// leaveSlow is leave when the swap failed or the reference may be the last.
func (s *Set) leaveSlow(e *entry) {
	for {
		r := e.refs.Load()
		if r <= 1 {
			break
		}
		if e.refs.CompareAndSwap(r, r-1) {
			return
		}
	}
	// Perhaps the last: drop it under the mutex (see the protocol).
	h := e.hash.Load()
	sh := &s.shards[h%shardCount]
	sh.mu.Lock()
	r := e.refs.Add(-1)
	if r == 0 {
		s.remove(sh, h, e)
	}
	sh.mu.Unlock()
	if r < 0 {
		s.panicf("key %q released more often than acquired", e.key)
	}
}

// remove takes e, of hash h, which has no reference left, out of its shard's
// table, and keeps it for another key when its semaphore is idle and healthy.
// sh.mu must be held.
func (s *Set) remove(sh *shard, h uint32, e *entry) {
	sh.delete(h, e)
	sh.retired += e.acquired
	e.acquired = 0
	if f, ok := e.second.(*flow); ok {
		sh.weights.Add(-f.weight)
	}
	if s.broken.Load() == nil && sh.nfree < maxFree && e.sem.Waiters() == 0 && e.sem.Available() == e.sem.Capacity() {
		sh.free[sh.nfree] = e
		sh.nfree++
	}
	// The Dekker pair with Drain: see drainedLocked.
	if sh.active.Add(-1) == 0 && s.draining.Load() > 0 {
		s.mu.Lock()
		s.drainedLocked()
		s.mu.Unlock()
	}
}

// eachEntry calls f for every active key, under its shard's mutex, one shard
// at a time: f must be quick and must not call the set.
func (s *Set) eachEntry(f func(*entry)) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.table.Load().each(f)
		sh.mu.Unlock()
	}
}
