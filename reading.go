package semaphore

import (
	"strconv"
	"time"
)

// A Reading is one reading of a limiter of this module, or of any type that
// speaks its contract, in plain values: what a debug page, a metrics exporter
// or an operator's tool shows without knowing the type. Every package's
// limiters have a Reading method that returns one.
//
// Each number is read from what the object counts, never derived from other
// numbers: Held is the units held, not the capacity less the available units,
// which differ when the object is broken (nothing is available), shrunk or in
// debt after Consume (more is held than the capacity). A number the object
// does not know is named in Unknown, and readers show it as unknown, not as 0.
// Text fields (Name, Cause, labels, sites, details) are as the object has them:
// readers that render them quote or escape them.
type Reading struct {
	Kind string // what the object is, such as "semaphore" or "keyed set"
	Name string // its name as its errors show it; may be empty, and shared with others

	Capacity  int64 // units admitted at once
	Held      int64 // units held or consumed now; may exceed Capacity after a shrink or Consume; still counted after Break
	Available int64 // units a call could take now without waiting; 0 once broken, never negative
	Waiters   int   // calls waiting now

	// Unlimited says the object has no limit in total (a keyed set limits each
	// key only): Capacity and Available mean nothing.
	Unlimited bool

	Broken bool   // it refuses every request for good
	Cause  string // why it broke, as given to Break; "" if none or unknown

	HeadWait     time.Duration // how long the head waiter has waited, if known; else 0
	OldestHolder time.Duration // the age of the oldest holder, if known; else 0

	// Counters only grow. They count calls by how they ended, as Stats does.
	Acquired  uint64 // calls granted, at once or after waiting
	Queued    uint64 // calls that joined the wait list
	TimedOut  uint64 // calls failed on a deadline (ErrTimedOut)
	Cancelled uint64 // calls whose context was cancelled without a deadline
	Rejected  uint64 // calls refused without waiting: ErrTooLarge or ErrQueueFull
	Shed      uint64 // calls refused to keep the queue short (ErrShed)

	Unknown Fields // the numbers above the object does not know

	Holders []HolderGroup // who holds units, if the object lists them; oldest first
	Waiting []WaitingCall // the wait list, head first, if the object lists it
	Details []Detail      // anything else worth showing, in the object's own words
}

// Fields is a set of a Reading's numbers.
type Fields uint16

// The numbers of a Reading an object can leave unknown.
const (
	CapacityField  Fields = 1 << iota // Capacity and Available
	HeldField                         // Held
	WaitersField                      // Waiters, and with it HeadWait
	BrokenField                       // Broken and Cause
	AcquiredField                     // Acquired
	QueuedField                       // Queued
	TimedOutField                     // TimedOut
	CancelledField                    // Cancelled
	RejectedField                     // Rejected
	ShedField                         // Shed

	AllFields Fields = 1<<iota - 1 // every number
)

// HolderGroup is a group of holders that share where they acquired and a label.
type HolderGroup struct {
	Site    string        // where the units were acquired, such as "file.go:41", or a process
	Label   string        // the label the acquiring context carried, or ""
	Holders int           // holders in the group
	Units   int64         // units they hold
	Age     time.Duration // age of the oldest of them
}

// WaitingCall is one call in a wait list.
type WaitingCall struct {
	Units  int64
	Waited time.Duration // 0 if unknown
}

// Detail is one named value of an object's own.
type Detail struct {
	Name, Value string
}

// Reading reads the semaphore: its capacity, the units held (or consumed), the
// units available and the waiters read together under its lock, and its
// counters as Stats gives them. Held is exact when the semaphore is broken,
// shrunk below what is held, or in debt after Consume. It never sheds, so Shed
// is 0. Without holder tracking, HeadWait and OldestHolder are 0 and Queued,
// with Waiters, is what a reader can bound the head's wait by. The calls
// acquired without waiting and the total time waited are among the details;
// the holders and the wait list are not listed (Diagnostics lists them).
func (s *Semaphore) Reading() Reading {
	st := s.Stats()
	r := Reading{
		Kind:         "semaphore",
		Name:         st.Name,
		Capacity:     st.Capacity,
		Held:         st.Held,
		Available:    st.Available,
		Waiters:      st.Waiters,
		Broken:       st.Broken,
		HeadWait:     st.HeadWait,
		OldestHolder: st.OldestHolder,
		Acquired:     st.Acquired,
		Queued:       st.Queued,
		TimedOut:     st.TimedOut,
		Cancelled:    st.Cancelled,
		Rejected:     st.Rejected,
		Details: []Detail{
			{Name: "acquired immediately", Value: strconv.FormatUint(st.AcquiredImmediately, 10)},
			{Name: "total wait time", Value: st.WaitTime.String()},
		},
	}
	if b := s.brokenState(); b != nil && b.cause != nil {
		r.Cause = b.cause.Error()
	}
	return r
}
