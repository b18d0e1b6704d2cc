package semdebug

import (
	"sync"
	"time"

	"github.com/fairsem/semaphore"
)

// observation is what the page derives from successive readings of one object:
// the head waiter's wait when the source does not tell it, rates, and the history
// its charts draw.
type observation struct {
	mu sync.Mutex

	// last is the previous reading; lastAt its time (zero before the first).
	last   semaphore.Reading
	lastAt time.Time
	// waitingSince is the time of the first reading since which no waiter left
	// the wait list and someone waited at every reading: the head waiter of that
	// reading has waited at least since then. Zero when nobody waits.
	waitingSince time.Time

	// base is the reading the rates are computed from, at baseAt; rates is the
	// last result, kept until a reading comes at least minRateWindow later.
	base   semaphore.Reading
	baseAt time.Time
	rates  rates

	history ring // sampled readings, for the charts

	// name is the object's name in its last reading; named says there was one.
	name  string
	named bool
}

// minRateWindow is the shortest interval rates are computed over: readings closer
// than that (two viewers refreshing together) would give noise.
const minRateWindow = time.Second

// rates are per second, over the interval since the reading before.
type rates struct {
	Known     bool // false until two readings minRateWindow apart
	Acquired  float64
	TimedOut  float64
	Cancelled float64
	Rejected  float64
	Shed      float64
}

// reading is one Reading with what the page derived from it.
type reading struct {
	semaphore.Reading
	At time.Time
	// HeadWait is the source's, or the bound derived from earlier readings when it
	// is larger; HeadWaitBound says that the bound was used.
	HeadWait      time.Duration
	HeadWaitBound bool
	Rates         rates
}

// read reads l and updates the derived state. The reading is taken under
// o.mu, so that readings are applied in the order they were taken.
func (o *observation) read(l Limiter, sample bool) reading {
	o.mu.Lock()
	defer o.mu.Unlock()
	snap := l.Reading()
	now := time.Now()
	rd := reading{Reading: snap, At: now, HeadWait: snap.HeadWait}
	o.name, o.named = snap.Name, true

	switch {
	case snap.Waiters == 0 || snap.Broken:
		o.waitingSince = time.Time{}
	case o.waitingSince.IsZero() || !nobodyLeft(o.last, snap):
		o.waitingSince = now
	}
	if snap.Waiters > 0 && !o.waitingSince.IsZero() && snap.Unknown&semaphore.QueuedField == 0 {
		if bound := now.Sub(o.waitingSince); snap.HeadWait == 0 || bound > snap.HeadWait {
			rd.HeadWait, rd.HeadWaitBound = bound, true
		}
	}
	o.last, o.lastAt = snap, now

	if o.baseAt.IsZero() {
		o.base, o.baseAt = snap, now
	} else if dt := now.Sub(o.baseAt); dt >= minRateWindow {
		secs := dt.Seconds()
		o.rates = rates{
			Known:     true,
			Acquired:  perSecond(o.base.Acquired, snap.Acquired, secs),
			TimedOut:  perSecond(o.base.TimedOut, snap.TimedOut, secs),
			Cancelled: perSecond(o.base.Cancelled, snap.Cancelled, secs),
			Rejected:  perSecond(o.base.Rejected, snap.Rejected, secs),
			Shed:      perSecond(o.base.Shed, snap.Shed, secs),
		}
		o.base, o.baseAt = snap, now
	}
	rd.Rates = o.rates

	if sample {
		o.history.add(point{At: now, Held: snap.Held, Waiters: int64(snap.Waiters), HeadWait: rd.HeadWait})
	}
	return rd
}

// nameOf is the name of l, the object observed: from its last reading, or
// from a reading taken now, which changes nothing else the page derived, if it
// was never read.
func (o *observation) nameOf(l Limiter) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.named {
		o.name, o.named = l.Reading().Name, true
	}
	return o.name
}

// nobodyLeft reports whether no waiter can have left the wait list between the
// readings prev and cur, both with waiters: the waiters then, plus those who
// joined since, are all still there. It never says so for a source that does
// not count Queued.
func nobodyLeft(prev, cur semaphore.Reading) bool {
	if prev.Waiters == 0 || cur.Unknown&(semaphore.QueuedField|semaphore.WaitersField) != 0 || cur.Queued < prev.Queued {
		return false
	}
	return uint64(prev.Waiters)+(cur.Queued-prev.Queued) == uint64(cur.Waiters)
}

func perSecond(from, to uint64, secs float64) float64 {
	if to < from {
		return 0 // a source that reset its counters
	}
	return float64(to-from) / secs
}

// historyLen is how many samples the charts keep: five minutes at one a second.
const historyLen = 300

// point is one sample of the charts.
type point struct {
	At       time.Time
	Held     int64
	Waiters  int64
	HeadWait time.Duration
}

// ring holds the last historyLen points.
type ring struct {
	points []point // up to historyLen; next is where the next one goes once full
	next   int
}

func (r *ring) add(p point) {
	if len(r.points) < historyLen {
		r.points = append(r.points, p)
		return
	}
	r.points[r.next] = p
	r.next = (r.next + 1) % historyLen
}

// historyPoints returns a copy of the sampled points, oldest first.
func (o *observation) historyPoints() []point {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := &o.history
	out := make([]point, 0, len(r.points))
	out = append(out, r.points[r.next:]...)
	return append(out, r.points[:r.next]...)
}
