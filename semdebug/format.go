package semdebug

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fairsem/semaphore"
)

// The formatting of a reading's values, shared by the HTML and the text forms: a
// number the source does not know shows as "-", never as 0.

const unknown = "-"

// count formats v, or "-" when f is among the unknown fields.
func (r *reading) count(f semaphore.Fields, v int64) string {
	if r.Unknown&f != 0 {
		return unknown
	}
	return strconv.FormatInt(v, 10)
}

// CapacityText is the capacity, "no limit" for an object without one.
func (r *reading) CapacityText() string {
	if r.Unlimited {
		return "no limit"
	}
	return r.count(semaphore.CapacityField, r.Capacity)
}

// AvailableText is the units available, "no limit" for an object without one.
func (r *reading) AvailableText() string {
	if r.Unlimited {
		return "no limit"
	}
	return r.count(semaphore.CapacityField, r.Available)
}

// HeldText is the units held, which the page calls in use.
func (r *reading) HeldText() string { return r.count(semaphore.HeldField, r.Held) }

func (r *reading) WaitersText() string { return r.count(semaphore.WaitersField, int64(r.Waiters)) }

// total formats c's value.
func (r *reading) total(c counter) string {
	if r.Unknown&c.field != 0 {
		return unknown
	}
	return strconv.FormatUint(c.total(&r.Reading), 10)
}

// rateText formats c's rate, per second; "-" until two readings were far
// enough apart.
func (r *reading) rateText(c counter) string {
	if !r.Rates.Known || r.Unknown&c.field != 0 {
		return unknown
	}
	return strconv.FormatFloat(c.rate(&r.Rates), 'f', 1, 64)
}

// HeadWaitText shows the head waiter's wait, with ">=" when it is the page's
// lower bound.
func (r *reading) HeadWaitText() string {
	if r.Waiters == 0 || r.Unknown&semaphore.WaitersField != 0 || r.HeadWait == 0 && !r.HeadWaitBound {
		return unknown // nobody waits, or nobody knows how long
	}
	if r.HeadWaitBound {
		return ">=" + roundDuration(r.HeadWait).String()
	}
	return roundDuration(r.HeadWait).String()
}

func ageText(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return roundDuration(d).String()
}

// BrokenText says whether the object is broken, and why: the cause, a value a
// user or a peer gave, quoted on every form.
func (r *reading) BrokenText() string {
	switch {
	case r.Unknown&semaphore.BrokenField != 0:
		return unknown
	case !r.Broken:
		return "no"
	case r.Cause != "":
		return "yes: " + strconv.Quote(r.Cause)
	}
	return "yes"
}

// BrokenYesNo says whether the object is broken.
func (r *reading) BrokenYesNo() string {
	switch {
	case r.Unknown&semaphore.BrokenField != 0:
		return unknown
	case r.Broken:
		return "yes"
	}
	return "no"
}

// roundDuration keeps two significant figures' worth: whole seconds past 10s,
// tenths below, milliseconds below a second.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// shortLen is how many characters of a name or kind the index shows: a longer
// one is cut, and shown whole on the object's page and in the cell's title.
const shortLen = 40

// short cuts s to shortLen characters, marking the cut with an ellipsis.
func short(s string) string {
	if utf8.RuneCountInString(s) <= shortLen {
		return s
	}
	n := 0
	for i := range s {
		if n == shortLen-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
