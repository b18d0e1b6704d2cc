package keyed

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fairsem/semaphore/internal/errs"
)

// Stats is a snapshot of a set: its active keys in total, and counters that
// only grow. Every failed call is counted once, under the error it returned,
// at whichever level it failed: Rejected for semaphore.ErrTooLarge and
// ErrQueueFull, TimedOut for semaphore.ErrTimedOut, Cancelled for a context
// cancelled without a deadline; a call failed by Break is in none of them.
// TryAcquire's failures are not counted.
type Stats struct {
	Name    string // from WithName
	Keys    int    // keys active now: with holders or calls in progress
	Held    int64  // units held now by the set's Units, summed over keys (each also holds as many global units)
	Waiters int    // calls in progress now: waiting for their key's units or the global's
	Broken  bool   // Break was called

	Acquired  uint64 // successful acquisitions (TryAcquire included)
	TimedOut  uint64
	Cancelled uint64
	Rejected  uint64
}

// KeyStats is a snapshot of one key.
type KeyStats struct {
	Key      string
	Capacity int64 // the key's capacity: the default or its override
	Held     int64 // units held by the key's Units
	Waiters  int   // the key's calls in progress: at the key's semaphore or the global one
}

// Stats returns a snapshot of the set. It reads every active key under the set's
// lock: it costs O(active keys).
func (s *Set) Stats() Stats {
	if s.label == "" {
		panic(errZeroSet)
	}
	st := Stats{
		Name:      s.name,
		Acquired:  s.acquired.Load(),
		TimedOut:  s.timedOut.Load(),
		Cancelled: s.cancelled.Load(),
		Rejected:  s.rejected.Load(),
	}
	s.mu.Lock()
	st.Keys = len(s.entries)
	st.Broken = s.broken != nil
	for _, e := range s.entries {
		st.Held += e.held.Load()
		st.Waiters += int(e.waiting.Load())
	}
	s.mu.Unlock()
	return st
}

// KeyStats returns a snapshot of key. A key that is not active holds nothing and
// has nobody waiting; its capacity is still reported (from WithCapacityFunc, if
// given, called for the purpose).
func (s *Set) KeyStats(key string) KeyStats {
	if s.label == "" {
		panic(errZeroSet)
	}
	s.mu.Lock()
	if e := s.entries[key]; e != nil {
		ks := keyStatsOf(e)
		s.mu.Unlock()
		return ks
	}
	s.mu.Unlock()
	return KeyStats{Key: key, Capacity: s.capacityFor(key)}
}

// keyStatsOf reads e; set.mu must be held, so that e serves its key.
func keyStatsOf(e *entry) KeyStats {
	return KeyStats{Key: e.key, Capacity: e.sem.Capacity(), Held: e.held.Load(), Waiters: int(e.waiting.Load())}
}

// Diagnostics renders a dump of the set for a human deciding which keys use the
// limits. Its first line sums the set up and names the key holding the most
// units, for example
//
//	keyed "uploads": 3 keys active, 9 units held, 5 calls waiting; most held by "alice" (4 of 4 units, 3 waiting)
//
// followed by the global semaphore's state, if any, and one row per active key,
// the keys holding the most first (then those with the most waiting), at most
// maxLines rows and a last row summing the rest; maxLines <= 0 means no limit.
// The keys are read under the set's lock, in one snapshot; the sorting and the
// rendering happen outside it. It costs O(k log k) for k active keys.
func (s *Set) Diagnostics(maxLines int) string {
	if s.label == "" {
		panic(errZeroSet)
	}
	s.mu.Lock()
	rows := make([]KeyStats, 0, len(s.entries))
	for _, e := range s.entries {
		rows = append(rows, keyStatsOf(e))
	}
	broken := s.broken != nil
	s.mu.Unlock()
	slices.SortFunc(rows, func(a, b KeyStats) int {
		if c := cmp.Compare(b.Held, a.Held); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Waiters, a.Waiters); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
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
	shown := rows
	if maxLines > 0 && len(rows) > maxLines {
		shown = rows[:maxLines]
	}
	for _, r := range shown {
		fmt.Fprintf(&b, "  %-24s held %d of %d, %d waiting\n", strconv.Quote(r.Key), r.Held, r.Capacity, r.Waiters)
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
