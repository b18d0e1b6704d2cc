package keyed

import (
	"sync/atomic"
)

// A table is a shard's active keys: open addressing with linear probing over
// an array of entry pointers, read without a lock (Set.lookup) and changed
// only under the shard's mutex.
//
// A reader loads the table, then probes from the key's home slot: a nil slot
// ends the search, a tombstone (a removed entry's slot) does not, and an entry
// with the key's hash is the key's entry if a reference can be taken on it and
// its key is the key (see the reference protocol in keys.go). Slots are
// written one atomic store at a time, so a reader sees each slot as it was
// before or after a change, never torn. A writer that would fill the array
// past maxLoad, or leave it nearly empty, builds a new table and stores it
// whole: readers still probing the old one find what was in it, and an entry
// removed since has no reference left, or serves another key, which the
// protocol tells them. So a reader can miss a key made active after it loaded
// the table, and then takes the mutex (joinSlow), which decides.
//
// Inserting reuses the first tombstone on the key's probe path, so a key made
// active and inactive over and over uses the same slot. Tombstones count as
// used: the array is rebuilt, without them, when used slots reach maxLoad.
type table struct {
	slots []atomic.Pointer[entry] // fixed length
	live  int                     // entries; guarded by the shard's mutex
	used  int                     // entries and tombstones; guarded by the shard's mutex
}

// tombstone marks a slot whose entry was removed.
var tombstone = new(entry)

// emptyTable is every shard's table until its first key: one nil slot, never
// written.
var emptyTable = &table{slots: make([]atomic.Pointer[entry], 1)}

const (
	// A table is rebuilt when its used slots would pass maxLoad of its length,
	// and when its entries fall to minLoad of it; a rebuilt table has its
	// entries at newLoad. Between minLoad and maxLoad a table costs 10 to 80
	// bytes per entry, about 13 at the load reached by growing.
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
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e != tombstone && e.hash.Load() == h && e.key == key {
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
		if e := t.slots[i].Load(); e != nil && e != tombstone {
			f(e)
		}
	}
}

// insert puts e, of hash h, whose key is not in the table, into the shard's
// table. sh.mu must be held.
func (sh *shard) insert(h uint32, e *entry) {
	t := sh.table.Load()
	if (t.used+1)*maxLoadDen > len(t.slots)*maxLoadNum {
		t = sh.rebuild(t.live + 1)
	}
	n := len(t.slots)
	for i := t.home(h); ; {
		switch x := t.slots[i].Load(); x {
		case nil:
			t.used++
			fallthrough
		case tombstone:
			t.live++
			t.slots[i].Store(e)
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
		if t.slots[i].Load() == e {
			t.live--
			t.clear(i)
			break
		}
		if i++; i == n {
			i = 0
		}
	}
	if t.live*minLoadDen < n && n > minSlots {
		sh.rebuild(t.live)
	}
}

// clear empties slot i, whose entry was removed: with a tombstone if a search
// may pass it to reach an entry further on, else with nil, and then the
// tombstones just before it too. A search passes slot i only if slot i+1 is
// not nil: every slot between an entry's home and the entry was taken when the
// entry was inserted, and a slot once taken becomes nil again only here, when
// no search needs it. So a key made active and inactive over and over leaves
// no tombstones behind. The shard's mutex must be held.
func (t *table) clear(i int) {
	n := len(t.slots)
	if t.slots[(i+1)%n].Load() != nil {
		t.slots[i].Store(tombstone)
		return
	}
	for t.slots[i].Store(nil); ; {
		t.used--
		if i--; i < 0 {
			i = n - 1
		}
		if t.slots[i].Load() != tombstone {
			return
		}
		t.slots[i].Store(nil)
	}
}

// rebuild replaces the shard's table by one without tombstones, sized for
// entries entries at newLoad, with the entries of the old one, and returns
// it. sh.mu must be held.
func (sh *shard) rebuild(entries int) *table {
	old := sh.table.Load()
	t := &table{slots: make([]atomic.Pointer[entry], max(entries*newLoadDen, minSlots))}
	n := len(t.slots)
	for i := range old.slots {
		e := old.slots[i].Load()
		if e == nil || e == tombstone {
			continue
		}
		j := t.home(e.hash.Load())
		for t.slots[j].Load() != nil {
			if j++; j == n {
				j = 0
			}
		}
		t.slots[j].Store(e)
		t.live++
	}
	t.used = t.live
	sh.table.Store(t)
	return t
}
