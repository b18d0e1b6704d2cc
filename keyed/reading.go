package keyed

import (
	"strconv"

	"github.com/fairsem/semaphore"
)

// Reading reads the set in the module's plain values (semaphore.Reading), for
// a debug page or an exporter that knows no keyed set: Held is the units its
// callers hold, counted per key as Stats counts them, also after Break;
// Waiters the calls waiting at either level. With WithLimit, Capacity is the
// limit and Available the units it could grant now; with WithGlobal, the
// global semaphore's (which other code may hold too: its own Reading says how
// much); without either, the set is Unlimited. A keyed set counts no calls
// that queued and never sheds; HeadWait and OldestHolder are not known.
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
	switch {
	case s.limit != nil:
		lr := s.limit.reading()
		r.Capacity, r.Available = lr.Capacity, lr.Available
	case s.global != nil:
		gr := s.global.Reading()
		r.Capacity, r.Available = gr.Capacity, gr.Available
		r.Details = append(r.Details, semaphore.Detail{Name: "global semaphore", Value: s.global.String()})
	default:
		r.Unlimited = true
	}
	if b := s.broken.Load(); b != nil {
		r.Cause = b.Reading().Cause
	}
	return r
}
