package etcdsem

import "sync"

// demand counts the callers of a block pool that wait for units, for the
// manager (how many, the units they wait for, the largest request) and for
// the reports. The core semaphore decides who is granted, in what order, and
// what a cancellation does; this only counts. A caller counts from just
// before it may wait until its wait ends.
type demand struct {
	mu    sync.Mutex
	n     int           // guarded by mu: callers waiting
	units int64         // guarded by mu: the units they wait for
	sizes map[int64]int // guarded by mu: callers waiting, by the units each asks
}

func (d *demand) join(n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	d.units += n
	d.sizes[n]++
}

func (d *demand) leave(n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n--
	d.units -= n
	if d.sizes[n]--; d.sizes[n] == 0 {
		delete(d.sizes, n)
	}
}

// read returns the callers waiting, the units they wait for, and the largest
// request among them.
func (d *demand) read() (callers int, units, largest int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for n := range d.sizes {
		largest = max(largest, n)
	}
	return d.n, d.units, largest
}
