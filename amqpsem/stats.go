package amqpsem

import (
	"context"
	"slices"

	"github.com/fairsem/semaphore/internal/statsline"
)

// Stats is a snapshot of a semaphore: the slots and their holders as the
// broker has them, and this handle's own callers and counts.
type Stats struct {
	Name  string // the semaphore's name, as Name
	Slots int    // the semaphore's slots: its A queues from slot 1 up to the first missing one
	// Holders are the slots whose B queue exists, held by any client of the
	// protocol, ascending; those above Slots are removed slots whose holders
	// have not given them back (looked for up to WithOvershoot above Slots).
	Holders []int
	Held    int   // the holders within Slots; at most Slots
	Mine    []int // the slots this handle's callers hold, ascending
	Waiting int   // this handle's callers in Acquire, waiting for slots
	Broken  bool  // this handle was broken (Break), with Reason
	Reason  string
	Wakeup  Wakeup // WakeEvents or WakePolling: how this handle's waiters learn of free slots
	// Counts since New, of this handle's calls.
	Acquired      int64 // acquires granted
	TimedOut      int64 // acquires that ended at their deadline
	Cancelled     int64 // acquires whose context was cancelled
	Contended     int64 // walks that gave up after their RESOURCE_LOCKED attempts (ErrContended)
	LockedRetries int64 // RESOURCE_LOCKED answers: another client declared the slot first
	Lost          int64 // Units lost with their connection
	Walks         int64 // walks of the slots (the protocol's acquire), granted or not
}

// String writes s on one line, its slot lists counted, for example
//
//	amqpsem "jobs" slots=4 holders=3 held=3 mine=1 waiting=2 broken=false wakeup=events acquired=120 timed_out=0 cancelled=1 contended=0 locked_retries=4 lost=0 walks=131
//
// with reason after broken=true when it is broken. amqpsemctl status lists
// the slots; %#v prints them whole. The name and the reason are quoted.
func (s Stats) String() string {
	// One call per field, in the order they are declared: a field added to
	// Stats adds its pair here (TestStats_StringNamesEveryField checks it).
	l := statsline.New("amqpsem", s.Name)
	l.Int("slots", int64(s.Slots))
	l.Int("holders", int64(len(s.Holders)))
	l.Int("held", int64(s.Held))
	l.Int("mine", int64(len(s.Mine)))
	l.Int("waiting", int64(s.Waiting))
	l.Bool("broken", s.Broken)
	if s.Broken {
		l.Quote("reason", s.Reason)
	}
	l.Word("wakeup", s.Wakeup.String())
	l.Int("acquired", s.Acquired)
	l.Int("timed_out", s.TimedOut)
	l.Int("cancelled", s.Cancelled)
	l.Int("contended", s.Contended)
	l.Int("locked_retries", s.LockedRetries)
	l.Int("lost", s.Lost)
	l.Int("walks", s.Walks)
	return l.String()
}

// Stats probes the semaphore's A and B queues (one or a few round trips) and
// returns them with this handle's own state. It fails with ErrClosed after
// Close, with ErrBlocked during a resource alarm, or with the broker's error.
func (s *Semaphore) Stats(ctx context.Context) (Stats, error) {
	c := opCall("stats")
	if s.isClosed() {
		return Stats{}, s.closedError(c)
	}
	slots, err := s.count(ctx)
	if err != nil {
		return Stats{}, s.adminError(ctx, c, err)
	}
	upTo := min(slots+s.cfg.overshoot, MaxSlots)
	all := make([]int, upTo)
	for i := range all {
		all[i] = i + 1
	}
	exists, err := s.probe.exists(ctx, holdQueues(s.name, all))
	if err != nil {
		return Stats{}, s.adminError(ctx, c, err)
	}
	st := Stats{Name: s.name, Slots: slots}
	for i, ok := range exists {
		if ok {
			st.Holders = append(st.Holders, all[i])
			if all[i] <= slots {
				st.Held++
			}
		}
	}
	st.Wakeup, _ = s.wake.modeNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	for u := range s.held {
		st.Mine = append(st.Mine, u.slots...)
	}
	slices.Sort(st.Mine)
	st.Waiting = s.waiting
	st.Broken, st.Reason = s.broken, s.reason
	st.Acquired, st.TimedOut, st.Cancelled = s.acquired, s.timedOut, s.cancelled
	st.Contended, st.LockedRetries, st.Lost, st.Walks = s.contended, s.lockedRetries, s.lost, s.walks
	return st, nil
}
