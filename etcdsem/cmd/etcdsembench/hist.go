package main

import (
	"math"
	"time"
)

// A hist counts durations in buckets 2% wide, from 1µs to about 100s: a
// quantile read from it is within 2% of the exact one. Histograms of several
// processes add up.
type hist struct {
	Counts []int64 `json:"counts"` // Counts[i]: durations in [bucketLow(i), bucketLow(i+1))
}

const (
	histBase    = 1.02
	histBuckets = 931 // 1.02^930 µs is about 100s
)

func newHist() hist { return hist{Counts: make([]int64, histBuckets)} }

// bucketOf returns the bucket of d: durations under 1µs fall in the first,
// above the range in the last.
func bucketOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us < 1 {
		return 0
	}
	return min(int(math.Log(us)/math.Log(histBase)), histBuckets-1)
}

// bucketHigh returns the upper bound of bucket i.
func bucketHigh(i int) time.Duration {
	return time.Duration(math.Pow(histBase, float64(i+1)) * float64(time.Microsecond))
}

func (h *hist) add(d time.Duration) { h.Counts[bucketOf(d)]++ }

func (h *hist) merge(o hist) {
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
}

func (h *hist) total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q <= 1), or 0 for an empty histogram.
func (h *hist) quantile(q float64) time.Duration {
	n := h.total()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			return bucketHigh(i)
		}
	}
	return bucketHigh(histBuckets - 1)
}
