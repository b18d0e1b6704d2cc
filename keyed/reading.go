package keyed

import (
	"fmt"
	"strconv"

	"github.com/fairsem/semaphore"
)

// readingKeys is how many keys a set with a limit of its own lists among its
// Reading's details: those holding the most.
const readingKeys = 10

// Reading reads the set in the core's plain values, for a debug page or a
// metrics exporter. Held is the units its callers hold over every key, counted
// per key as Stats counts them, never derived, also after Break. Against what
// it is read depends on the set's second level:
//
//   - With a limit of its own (WithLimit), Capacity is the limit and Available
//     the units of it the limit counts free (0 once broken, and after a
//     shrinking Resize until the units held are below the new limit); the keys
//     holding the most, with their shares, are among the details.
//   - With a global semaphore (WithGlobal), Capacity and Available are that
//     semaphore's, which other code may share: Held, the set's own, can then be
//     less than Capacity - Available.
//   - With neither, the set limits each key only: Unlimited.
//
// Waiters counts the calls waiting at either level; a set counts no calls that
// queued (Queued is unknown), and never sheds.
func (s *Set) Reading() semaphore.Reading {
	st := s.Stats()
	r := semaphore.Reading{
		Kind:      "keyed set",
		Name:      st.Name,
		Held:      st.Held,
		Waiters:   st.Waiters,
		Broken:    st.Broken,
		Acquired:  st.Acquired,
		TimedOut:  st.TimedOut,
		Cancelled: st.Cancelled,
		Rejected:  st.Rejected,
		Unknown:   semaphore.QueuedField,
		Details:   []semaphore.Detail{{Name: "active keys", Value: strconv.Itoa(st.Keys)}},
	}
	if b := s.broken.Load(); b != nil {
		r.Broken, r.Cause = true, b.Reading().Cause
	}
	switch {
	case s.limit != nil:
		lr := s.limit.reading()
		r.Capacity, r.Available = lr.Capacity, lr.Available
		for _, k := range s.ActiveKeys(readingKeys) {
			r.Details = append(r.Details, semaphore.Detail{Name: "key " + strconv.Quote(k.Key), Value: fmt.Sprintf(
				"held %d, share %d, borrowed %d; weight %d, guarantee %d, capacity %d; %d waiting",
				k.Held, k.Share, k.Borrowed, k.Weight, k.Guarantee, k.Capacity, k.Waiters)})
		}
	case s.global != nil:
		gr := s.global.Reading()
		r.Capacity, r.Available = gr.Capacity, gr.Available
		r.Details = append(r.Details, semaphore.Detail{Name: "global semaphore", Value: s.global.String()})
	default:
		r.Unlimited = true
	}
	return r
}
