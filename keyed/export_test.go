package keyed

// MapState reports the active keys, the peaks the shards' maps are sized by
// (summed) and the idle entries kept, for tests that check that memory follows
// the active keys.
func (s *Set) MapState() (entries, peak, free int) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		entries += len(sh.m)
		peak += sh.peak
		free += len(sh.free)
		sh.mu.RUnlock()
	}
	return entries, peak, free
}
