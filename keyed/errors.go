package keyed

import (
	"errors"
	"strconv"
	"strings"

	"github.com/fairsem/semaphore"
)

// acquireError is the one error type of the package. Its message reads
// `keyed "NAME": acquire N units for key "KEY": WHY`, where WHY is the reason the
// semaphore that refused the call gave, prefixed with the global semaphore's
// name when that one refused it. It wraps that semaphore's error, so errors.Is
// matches the core's sentinels (semaphore.ErrTimedOut, ErrBroken, ErrTooLarge,
// ErrQueueFull) and the context's error and cause or the error given to Break.
type acquireError struct {
	s      *Set
	key    string
	n      int64
	global *semaphore.Semaphore // the global semaphore when it refused the call; else nil
	err    error                // the refusing semaphore's error
}

func (e *acquireError) Error() string {
	why := reason(e.err.Error(), e.n)
	if e.global != nil {
		g := "global semaphore"
		if name := e.global.Name(); name != "" {
			g += " " + strconv.Quote(name)
		}
		why = g + ": " + why
	}
	return e.s.label + ": acquire " + plural(e.n, "unit") + " for key " + strconv.Quote(e.key) + ": " + why
}

func (e *acquireError) Unwrap() error { return e.err }

// reason is the part of a core acquire error's message after the semaphore and
// the request ("semaphore X: acquire N units: WHY"), so that the keyed message
// does not say twice what was asked. A message of another shape is kept whole.
func reason(msg string, n int64) string {
	if _, why, ok := strings.Cut(msg, ": acquire "+plural(n, "unit")+": "); ok {
		return why
	}
	return msg
}

// fail makes the error of a call for n units of key that the semaphore at one
// level refused with err (global is nil when the key's semaphore, or the broken
// set, refused it), and counts it as Stats describes.
func (s *Set) fail(key string, n int64, global *semaphore.Semaphore, err error) error {
	switch {
	case isAny(err, semaphore.ErrBroken):
	case isAny(err, semaphore.ErrTimedOut):
		s.timedOut.Add(1)
	case isAny(err, semaphore.ErrTooLarge, semaphore.ErrQueueFull):
		s.rejected.Add(1)
	default:
		s.cancelled.Add(1)
	}
	return &acquireError{s: s, key: key, n: n, global: global, err: err}
}

// plural writes n of a noun, in the singular for one: "1 unit", "3 keys".
func plural(n int64, noun string) string {
	s := strconv.FormatInt(n, 10) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}

// isAny reports whether err matches one of the targets.
func isAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
