package semdebug

import "time"

// A Source is anything the page can show: the package adapts the core's
// *semaphore.Semaphore and admission's *Controller and *Group itself, and any
// other limiter (a distributed semaphore in its own module, say) plugs in by
// implementing Source on a pointer type and being passed to Register.
//
// The page calls the methods while it renders, from the handler's goroutine,
// possibly concurrently: they must be safe for concurrent use, quick, and must
// not call back into this package.
type Source interface {
	// Name is the object's name as its errors and logs show it; it may be empty
	// and may be shared with other objects: the page tells them apart by id.
	Name() string
	// Kind says what the object is, for example "semaphore".
	Kind() string
	// Snapshot reads the object's state, ideally in one hold of its lock.
	Snapshot() Snapshot
	// Diagnostics is the object's own dump for a human, at most maxLines rows
	// per table (maxLines <= 0: no limit).
	Diagnostics(maxLines int) string
}

// Snapshot is one reading of a Source. Counters only grow; the page derives its
// rates from their differences between readings.
type Snapshot struct {
	Capacity  int64 // units the object admits at once
	InUse     int64 // units held now; may exceed Capacity after a shrink
	Available int64 // units free now
	Waiters   int   // calls waiting now

	// Joined counts every call that ever joined the wait list. With Waiters it
	// tells the page whether any waiter left between two readings; if none did,
	// the head waiter of the first reading is still the head, so the page knows
	// a lower bound of the head's wait even when HeadWait is 0.
	Joined uint64

	// HeadWait is how long the head waiter has waited, if the source knows;
	// 0 if it does not (or nobody waits).
	HeadWait time.Duration
	// OldestHolder is the age of the oldest holder, if the source knows; else 0.
	OldestHolder time.Duration

	Broken bool   // the object refuses every request for good
	Cause  string // why it broke, if known

	Acquired uint64 // requests granted, at once or after waiting
	TimedOut uint64 // requests failed on a deadline
	Shed     uint64 // requests refused without being served: queue full, too large, shed

	Holders  []Holder // who holds units, if the source knows; oldest first
	WaitList []Waiter // the wait list, head first, if the source knows
	Details  []Detail // anything else worth showing on the object's page
}

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
