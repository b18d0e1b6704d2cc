package keyed

import (
	"sync/atomic"
)

// A table is a shard's active keys: open addressing with linear probing over
// an array of slots, each an entry pointer and the entry's hash, read without
// a lock (Set.lookup) and changed only under the shard's mutex.
//
// A reader loads the table, then probes from the key's home slot: a nil slot
// ends the search, a tombstone (a removed entry's slot) does not, a slot with
// another hash is passed without reading its entry, and an entry in a slot
// with the key's hash is the key's entry if a reference can be taken on it and
// its key is the key (see the reference protocol in keys.go). Each word of a
// slot is written by one atomic store, so a reader sees each word as it was
// before or after a change. A slot's two words may be of different moments:
// insert stores the hash, then the entry, and a reader loads the entry, then
// the hash, so a reader that sees an entry sees the hash stored with it or a
// later slot's. A later hash that differs makes it pass an entry removed from
// the slot since, which it could have missed by loading a moment later; a
// later hash that matches sends it to the protocol, which checks the entry's
// own hash and key under a reference. A writer that would fill the array
// past maxLoad, or leave it nearly empty, builds a new table and stores it
// whole: readers still probing the old one find what was in it, and an entry
// removed since has no reference left, or serves another key, which the
// protocol tells them. So a reader can miss a key made active after it loaded
// the table, and then takes the mutex (joinSlow), which decides.
//
// Inserting reuses the first tombstone on the key's probe path, so a key made
// active and inactive over and over uses the same slot. Tombstones count as
// used (shard.used): the array is rebuilt, without them, when used slots reach
// maxLoad.
type table struct {
	slots []slot // fixed length; the table's counts are its shard's
	// To 64 bytes, a size the allocator places on a cache line of its own:
	// nothing written shares the line every reader loads, so the line stays
	// in each core's cache while keys come and go (the counts that change
	// with each of them are in the shard, whose mutex line they write anyway).
	_ [40]byte
}

// A slot holds an entry, a tombstone or nil, and the hash of the last entry
// stored in it, which a probe compares before it reads the entry: passing
// another key's entry costs no load of that entry's cache line.
type slot struct {
	hash atomic.Uint32
	e    atomic.Pointer[entry]
}

// tombstone marks a slot whose entry was removed.
var tombstone = new(entry)

// emptyTable is every shard's table until its first key: one nil slot, never
// written.
var emptyTable = &table{slots: make([]slot, 1)}

const (
	// A table is rebuilt when its used slots would pass maxLoad of its length,
	// and when its entries fall to minLoad of it; a rebuilt table has its
	// entries at newLoad. Between minLoad and maxLoad a table costs 20 to 160
	// bytes per entry, about 26 at the load reached by growing.
	maxLoadNum, maxLoadDen = 4, 5
	minLoadDen             = 10
	newLoadDen             = 2
	minSlots               = 8
)

// home returns the slot where the search for a key of hash h starts. The
// shard was chosen by the hash's low bits; the product's high half depends on
// all of them.
func (t *table) home(h uint32) int {
	return int(uint64(h) * uint64(len(t.slots)) >> 32)
}

// find returns the entry of key, of hash h, or nil. The shard's mutex must be
// held.
func (t *table) find(h uint32, key string) *entry {
	n := len(t.slots)
	for i, probes := t.home(h), 0; probes < n; probes++ {
		e := t.slots[i].e.Load()
		if e == nil {
			return nil
		}
		if e != tombstone && t.slots[i].hash.Load() == h && e.key == key {
			return e
		}
		if i++; i == n {
			i = 0
		}
	}
	return nil
}

// each calls f for every entry. The shard's mutex must be held.
func (t *table) each(f func(*entry)) {
	for i := range t.slots {
		if e := t.slots[i].e.Load(); e != nil && e != tombstone {
			f(e)
		}
	}
}

// insert puts e, of hash h, whose key is not in the table, into the shard's
// table. sh.mu must be held.
func (sh *shard) insert(h uint32, e *entry) {
	t := sh.table.Load()
	if (sh.used+1)*maxLoadDen > len(t.slots)*maxLoadNum {
		t = sh.rebuild(sh.live + 1)
	}
	n := len(t.slots)
	for i := t.home(h); ; {
		switch x := t.slots[i].e.Load(); x {
		case nil:
			sh.used++
			fallthrough
		case tombstone:
			sh.live++
			t.slots[i].hash.Store(h) // before the entry (see above)
			t.slots[i].e.Store(e)
			return
		}
		if i++; i == n {
			i = 0
		}
	}
}

// delete replaces e, of hash h, in the shard's table by a tombstone, and
// rebuilds a table left nearly empty. sh.mu must be held.
func (sh *shard) delete(h uint32, e *entry) {
	t := sh.table.Load()
	n := len(t.slots)
	for i := t.home(h); ; {
		if t.slots[i].e.Load() == e {
			sh.live--
			sh.used -= t.clear(i)
			break
		}
		if i++; i == n {
			i = 0
		}
	}
	if sh.live*minLoadDen < n && n > minSlots {
		sh.rebuild(sh.live)
	}
}

// clear empties slot i, whose entry was removed: with a tombstone if a search
// may pass it to reach an entry further on, else with nil, and then the
// tombstones just before it too; it returns the slots it made nil. A search
// passes slot i only if slot i+1 is not nil: every slot between an entry's
// home and the entry was taken when the entry was inserted, and a slot once
// taken becomes nil again only here, when no search needs it. So a key made
// active and inactive over and over leaves no tombstones behind. The shard's
// mutex must be held.
func (t *table) clear(i int) (freed int) {
	n := len(t.slots)
	if t.slots[(i+1)%n].e.Load() != nil {
		t.slots[i].e.Store(tombstone)
		return 0
	}
	for t.slots[i].e.Store(nil); ; {
		freed++
		if i--; i < 0 {
			i = n - 1
		}
		if t.slots[i].e.Load() != tombstone {
			return freed
		}
		t.slots[i].e.Store(nil)
	}
}

// rebuild replaces the shard's table by one without tombstones, sized for
// entries entries at newLoad, with the entries of the old one, and returns
// it. sh.mu must be held.
func (sh *shard) rebuild(entries int) *table {
	old := sh.table.Load()
	t := &table{slots: make([]slot, max(entries*newLoadDen, minSlots))}
	n := len(t.slots)
	for i := range old.slots {
		e := old.slots[i].e.Load()
		if e == nil || e == tombstone {
			continue
		}
		h := e.hash.Load()
		j := t.home(h)
		for t.slots[j].e.Load() != nil {
			if j++; j == n {
				j = 0
			}
		}
		t.slots[j].hash.Store(h)
		t.slots[j].e.Store(e)
	}
	sh.used = sh.live
	sh.table.Store(t)
	return t
}
