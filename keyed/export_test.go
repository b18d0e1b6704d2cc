package keyed

// MapState reports the active keys, the slots of the shards' tables (summed)
// and the idle entries kept, for tests that check that memory follows the
// active keys.
func (s *Set) MapState() (entries, slots, free int) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		t := sh.table.Load()
		entries += sh.live
		slots += len(t.slots)
		free += sh.nfree
		sh.mu.Unlock()
	}
	return entries, slots, free
}
