package semdebug

import "time"

// A Limiter is what Register accepts: anything with a dump of itself for a
// human, as the limiters of this module the page knows have (the package doc
// lists them, and how the page shows each) and as every Source has. A type the page does not know shows its
// name (from a Name() string method, if it has one), its type and its dump,
// with every number unknown; to show numbers too, implement Source.
type Limiter interface {
	// Diagnostics is the object's own dump, at most maxLines rows per table
	// (maxLines <= 0: no limit).
	Diagnostics(maxLines int) string
}

// A Source is a Limiter that tells the page its numbers: any limiter the
// package does not know (a distributed semaphore in its own module, say) plugs
// in by implementing Source on a pointer type and being passed to Register.
//
// The page calls the methods while it renders, from the handler's goroutine,
// possibly concurrently: they must be safe for concurrent use, quick, and must
// not call back into this package.
type Source interface {
	Limiter
	// Name is the object's name as its errors and logs show it; it may be empty
	// and may be shared with other objects: the page tells them apart by id.
	Name() string
	// Kind says what the object is, for example "semaphore".
	Kind() string
	// Snapshot reads the object's state, ideally in one hold of its lock.
	Snapshot() Snapshot
}

// Snapshot is one reading of a Source, in the names and meanings of the core's
// semaphore.Stats. Counters only grow; the page derives its rates from their
// differences between readings. A number the source does not know or count is
// named in Unknown, and the page shows it as unknown rather than as 0.
type Snapshot struct {
	Capacity  int64 // units the object admits at once
	InUse     int64 // units held now; may exceed Capacity after a shrink
	Available int64 // units free now
	Waiters   int   // calls waiting now

	// Unlimited says the object has no limit in total (a keyed set without a
	// global semaphore limits each key only): Capacity and Available are
	// meaningless, and the page says "no limit".
	Unlimited bool

	// HeadWait is how long the head waiter has waited, if the source knows;
	// 0 if it does not (or nobody waits).
	HeadWait time.Duration
	// OldestHolder is the age of the oldest holder, if the source knows; else 0.
	OldestHolder time.Duration

	Broken bool   // the object refuses every request for good
	Cause  string // why it broke, if known

	Acquired uint64 // calls granted, at once or after waiting
	// Queued counts every call that ever joined the wait list. With Waiters it
	// tells the page whether any waiter left between two readings; if none did,
	// the head waiter of the first reading is still the head, so the page knows
	// a lower bound of the head's wait even when HeadWait is 0.
	Queued    uint64
	TimedOut  uint64 // calls failed on a deadline (semaphore.ErrTimedOut)
	Cancelled uint64 // waits whose context was cancelled without a deadline
	Rejected  uint64 // calls refused without waiting: semaphore.ErrTooLarge or ErrQueueFull
	Shed      uint64 // calls queued, then refused to keep the queue short (semaphore.ErrShed)

	Unknown Fields // the numbers above the source does not know

	Holders  []Holder // who holds units, if the source lists them; oldest first
	WaitList []Waiter // the wait list, head first, if the source lists it
	Details  []Detail // anything else worth showing on the object's page
}

// Fields is a set of a Snapshot's numbers.
type Fields uint16

// The numbers of a Snapshot a source can leave unknown.
const (
	CapacityField  Fields = 1 << iota // Capacity and Available
	InUseField                        // InUse
	WaitersField                      // Waiters, and with it HeadWait
	BrokenField                       // Broken
	AcquiredField                     // Acquired
	QueuedField                       // Queued: without it the page derives no bound of the head's wait
	TimedOutField                     // TimedOut
	CancelledField                    // Cancelled
	RejectedField                     // Rejected
	ShedField                         // Shed

	AllFields Fields = 1<<iota - 1 // every number: the source tells nothing but its dump
)

// Holder is a group of holders that share an acquire site and label.
type Holder struct {
	Site    string        // where the units were acquired, "file.go:41"
	Label   string        // the label the acquiring context carried, or ""
	Holders int           // holders in the group
	Units   int64         // units they hold
	Age     time.Duration // age of the oldest of them
}

// Waiter is one call in a wait list.
type Waiter struct {
	Units  int64
	Waited time.Duration // 0 if unknown
}

// Detail is one named value of a Source's own, shown as given.
type Detail struct {
	Name, Value string
}
