package keyed

// MapState reports the map's length and the peak it is sized by, for tests that
// check that memory follows the active keys.
func (s *Set) MapState() (entries, peak, free int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), s.peak, len(s.free)
}
