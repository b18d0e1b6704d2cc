package keyed

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/statsline"
)

// Stats is a snapshot of a set: its active keys in total, and counters that
// only grow. Every failed call is counted once, by the semaphore.Outcome its
// error carries, at whichever level it failed: Rejected for TooLarge and
// QueueFull, TimedOut for TimedOut, Cancelled for Cancelled (whatever the
// context's cause matches); a call failed by Break is in none of them.
// TryAcquire's failures are not counted.
type Stats struct {
	Name    string // from WithName
	Keys    int    // keys active now: with holders or calls in progress
	Limit   int64  // the limit of WithLimit now; 0 without one
	Limited bool   // the set has a limit (WithLimit): Limit is it
	Held    int64  // units held now by the set's Units, summed over keys (each also holds as many at the global level)
	Waiters int    // calls waiting now: at their key's semaphore, or at the second level holding their key's units
	Broken  bool   // Break was called

	Acquired  uint64 // successful acquisitions (TryAcquire included)
	TimedOut  uint64
	Cancelled uint64
	Rejected  uint64
}

// KeyStats is a snapshot of one key.
type KeyStats struct {
	Key      string
	Capacity int64  // the key's capacity: the default or its override
	Held     int64  // units held by the key's holders (Units), at both levels
	Waiters  int    // the key's calls waiting: at the key's semaphore, or holding its units at the second level
	Acquired uint64 // the key's calls granted since the key became active

	// With WithLimit only; zero without.
	Weight    int64 // the key's weight (WithWeightFunc; 1 by default)
	Guarantee int64 // the key's guaranteed minimum (WithGuaranteeFunc)
	Share     int64 // the key's weighted share of the limit if every active key wanted more: Limit × Weight / (the active keys' weights), rounded down, at least Guarantee and at most Capacity
	Borrowed  int64 // units held beyond Share: lent by keys that do not use their share
}

// Stats returns a snapshot of the set. It reads each active key under its
// shard's lock, one shard at a time: it costs O(active keys), and its sums
// may mix moments when calls run meanwhile.
func (s *Set) Stats() Stats {
	if s.label == "" {
		panic(errZeroSet)
	}
	limit, limited := s.Limit()
	st := Stats{Name: s.name, Limit: limit, Limited: limited}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Acquired += sh.retired
		sh.table.Load().each(func(e *entry) {
			st.Keys++
			st.Held += e.held()
			st.Waiters += e.waiters()
			st.Acquired += atomic.LoadUint64(&e.acquired)
		})
		sh.mu.Unlock()
		st.TimedOut += sh.timedOut.Load()
		st.Cancelled += sh.cancelled.Load()
		st.Rejected += sh.rejected.Load()
	}
	st.Broken = s.broken.Load() != nil
	return st
}

// held reads the units held by e's holders: those its key's semaphore counts
// held, less those of calls still on their way through the second level. Read
// as two numbers while calls run, it is clamped at 0.
func (e *entry) held() int64 {
	var pending int64
	if e.second != nil {
		_, pending = e.second.inFlight()
	}
	return max(e.sem.Stats().Held-pending, 0)
}

// waiters reads the calls waiting on e's key: at its semaphore, and at the
// second level holding its units.
func (e *entry) waiters() int {
	w := e.sem.Waiters()
	if e.second != nil {
		calls, _ := e.second.inFlight()
		w += calls
	}
	return w
}

// weights sums the weights of the active keys.
func (s *Set) weights() int64 {
	var w int64
	for i := range s.shards {
		w += s.shards[i].weights.Load()
	}
	return w
}

// String writes s on one line, each field under the name the metrics and
// Diagnostics give it, for example
//
//	keyed "uploads" keys=3 limit=10 held=9 waiters=5 broken=false acquired=120 timed_out=1 cancelled=0 rejected=2
//
// limit is "none" for a set without one. The name is quoted; an unnamed
// set's line begins "unnamed keyed".
func (s Stats) String() string {
	l := statsline.New("keyed", s.Name)
	l.Int("keys", int64(s.Keys))
	if s.Limited {
		l.Int("limit", s.Limit)
	} else {
		l.Word("limit", "none")
	}
	l.Int("held", s.Held)
	l.Int("waiters", int64(s.Waiters))
	l.Bool("broken", s.Broken)
	l.Uint("acquired", s.Acquired)
	l.Uint("timed_out", s.TimedOut)
	l.Uint("cancelled", s.Cancelled)
	l.Uint("rejected", s.Rejected)
	return l.String()
}

// String writes ks on one line, each field under the name Diagnostics gives
// it, for example
//
//	key "alice" capacity=4 held=4 waiters=3 weight=2 guarantee=1 share=3 borrowed=1 acquired=17
//
// the fields of a set with a limit (weight to acquired) only when Weight is
// not 0, as it is in a set with one. The key is quoted, "" included.
func (ks KeyStats) String() string {
	l := statsline.Quoted("key", ks.Key)
	l.Int("capacity", ks.Capacity)
	l.Int("held", ks.Held)
	l.Int("waiters", int64(ks.Waiters))
	if ks.Weight != 0 {
		l.Int("weight", ks.Weight)
		l.Int("guarantee", ks.Guarantee)
		l.Int("share", ks.Share)
		l.Int("borrowed", ks.Borrowed)
		l.Uint("acquired", ks.Acquired)
	}
	return l.String()
}

// KeyStats returns a snapshot of key. A key that is not active holds nothing and
// has nobody waiting; its capacity, weight, guarantee and share are still
// reported (from the functions of the options, called for the purpose).
func (s *Set) KeyStats(key string) KeyStats {
	if s.label == "" {
		panic(errZeroSet)
	}
	limit, _ := s.Limit()
	weights := s.weights()
	h, sh := s.shardOf(key)
	sh.mu.Lock()
	if e := sh.table.Load().find(h, key); e != nil {
		ks := keyStatsOf(e, limit, weights)
		sh.mu.Unlock()
		return ks
	}
	sh.mu.Unlock()
	p := s.paramsFor(key)
	ks := KeyStats{Key: key, Capacity: p.capacity}
	if s.limit != nil {
		ks.Weight, ks.Guarantee = p.weight, p.guarantee
		ks.Share = shareOf(limit, p, weights+p.weight)
	}
	return ks
}

// keyStatsOf reads e, which serves its key: its shard's mutex must be held.
// limit and weights are the set's limit and its active keys' weights.
func keyStatsOf(e *entry, limit, weights int64) KeyStats {
	ks := KeyStats{Key: e.key, Capacity: e.sem.Capacity(), Held: e.held(), Waiters: e.waiters(), Acquired: atomic.LoadUint64(&e.acquired)}
	if f, ok := e.second.(*flow); ok {
		ks.Weight, ks.Guarantee = f.weight, f.guarantee
		ks.Share = shareOf(limit, params{capacity: ks.Capacity, weight: f.weight, guarantee: f.guarantee}, weights)
		ks.Borrowed = max(ks.Held-ks.Share, 0)
	}
	return ks
}

// shareOf is the share of a key with parameters p, of a limit whose active keys
// weigh weights in all (p's included).
func shareOf(limit int64, p params, weights int64) int64 {
	if weights <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(limit), uint64(p.weight))
	// weights includes weight (read apart, it may not): the quotient is at most
	// limit, which Div64 needs.
	q, _ := bits.Div64(hi, lo, uint64(max(weights, p.weight)))
	return min(max(int64(q), p.guarantee), p.capacity)
}

// ActiveKeys returns a snapshot of the active keys, the keys holding the most
// units first (then those with the most calls waiting, then by key), at most
// maxKeys of them; maxKeys <= 0 means all. Each key is read under its shard's
// lock, one shard at a time; it costs O(k log k) for k active keys.
func (s *Set) ActiveKeys(maxKeys int) []KeyStats {
	if s.label == "" {
		panic(errZeroSet)
	}
	limit, _ := s.Limit()
	weights := s.weights()
	var rows []KeyStats
	s.eachEntry(func(e *entry) { rows = append(rows, keyStatsOf(e, limit, weights)) })
	slices.SortFunc(rows, func(a, b KeyStats) int {
		if c := cmp.Compare(b.Held, a.Held); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Waiters, a.Waiters); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	if maxKeys > 0 && len(rows) > maxKeys {
		rows = rows[:maxKeys]
	}
	return rows
}

// Diagnostics renders a dump of the set for a human deciding which keys use the
// limits. Its first line sums the set up and names the key holding the most
// units, for example
//
//	keyed "uploads": 3 keys active, 9 units held, 5 calls waiting; most held by "alice" (4 of 4 units, 3 waiting)
//
// followed by the global semaphore's state, if any, or the limit's, naming
// the keys that hold more than their shares (KeyStats.Borrowed), and one row
// per active key, the keys holding the most first (then those with the most
// waiting), at most maxLines rows and a last row summing the rest; maxLines <=
// 0 means no limit. With WithLimit, each row gives its key's weight,
// guarantee, share and grants. The keys are read under their shards' locks,
// one shard at a time; the sorting and the rendering happen outside them. It
// costs O(k log k) for k active keys.
func (s *Set) Diagnostics(maxLines int) string {
	if s.label == "" {
		panic(errZeroSet)
	}
	rows := s.ActiveKeys(0)
	broken := s.broken.Load() != nil
	limit, _ := s.Limit()
	var held, waiting int64
	for _, r := range rows {
		held += r.Held
		waiting += int64(r.Waiters)
	}

	var b strings.Builder
	b.WriteString(s.label + ": ")
	if broken {
		b.WriteString("broken, ")
	}
	fmt.Fprintf(&b, "%s active, %s held, %s waiting", errs.Count(int64(len(rows)), "key"), errs.Count(held, "unit"), errs.Count(waiting, "call"))
	if len(rows) > 0 {
		top := rows[0]
		fmt.Fprintf(&b, "; most held by %s (%d of %s, %d waiting)", strconv.Quote(top.Key), top.Held, errs.Count(top.Capacity, "unit"), top.Waiters)
	}
	b.WriteByte('\n')
	if s.global != nil {
		b.WriteString("  global: " + s.global.String() + "\n")
	}
	if s.limit != nil {
		fmt.Fprintf(&b, "  limit: %s held of %d", errs.Count(held, "unit"), limit)
		var over []string
		for _, r := range rows { // the most held first
			if r.Borrowed > 0 {
				over = append(over, fmt.Sprintf("%s (%d, share %d)", strconv.Quote(r.Key), r.Held, r.Share))
			}
		}
		if len(over) > 3 {
			over = append(over[:3], fmt.Sprintf("%d more", len(over)-3))
		}
		if len(over) > 0 {
			b.WriteString("; over their shares: " + strings.Join(over, ", "))
		}
		b.WriteByte('\n')
	}
	shown := rows
	if maxLines > 0 && len(rows) > maxLines {
		shown = rows[:maxLines]
	}
	for _, r := range shown {
		fmt.Fprintf(&b, "  %-24s held %d of %d, %d waiting", strconv.Quote(r.Key), r.Held, r.Capacity, r.Waiters)
		if s.limit != nil {
			fmt.Fprintf(&b, "; weight %d, guarantee %d, share %d, borrowed %d, acquired %d", r.Weight, r.Guarantee, r.Share, r.Borrowed, r.Acquired)
		}
		b.WriteByte('\n')
	}
	if rest := rows[len(shown):]; len(rest) > 0 {
		var h, w int64
		for _, r := range rest {
			h += r.Held
			w += int64(r.Waiters)
		}
		fmt.Fprintf(&b, "  … %d more %s, holding %s, %d waiting\n", len(rest), keysWord(len(rest)), errs.Count(h, "unit"), w)
	}
	return b.String()
}

// keysWord is "key" or "keys", as n requires.
func keysWord(n int) string {
	if n == 1 {
		return "key"
	}
	return "keys"
}
