package etcdsem

import "slices"

// fairShare returns the units a handle whose demand is self should hold when
// the handles whose demands are others share capacity max-min fairly: every
// handle gets its whole demand if the demands fit; otherwise there is a level
// L such that each handle gets min(demand, L) and those levels add up to the
// capacity (rounded down to whole units), and the handle's share is
// min(self, L). Demands are non-negative.
func fairShare(capacity, self int64, others []int64) int64 {
	ds := append(slices.Clone(others), self)
	slices.Sort(ds)
	left := capacity
	for i, d := range ds {
		// The handles from i on all demand at least d: if each of them can
		// have d, the smallest is served whole and the level is higher.
		rest := int64(len(ds) - i)
		if d > left/rest {
			return min(self, left/rest)
		}
		left -= d
	}
	return self
}
