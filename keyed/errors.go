package keyed

import (
	"errors"
	"strconv"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// The set's errors are errs.Error, the module's one error type. An acquire's
// reads `keyed "NAME": acquire N units for key "KEY": WHY`, where WHY is the
// reason given by the level that refused the call, after `global semaphore
// "G": ` when the global semaphore of WithGlobal refused it. It wraps the
// refusing level's error, so errors.Is matches the core's sentinels
// (semaphore.ErrTimedOut, ErrBroken, ErrTooLarge, ErrQueueFull) and the
// context's error and cause or the error given to Break, and it carries the
// call's semaphore.Outcome, which semaphore.OutcomeOf reads.

// subject names the set in its errors' messages.
type subject Set

func (s *subject) Label() string { return s.label }

// fail makes the error of a call for n units of key that a semaphore at one
// level refused with err (global is nil when the key's semaphore, or the broken
// set, refused it), and counts it as Stats describes, by the outcome the
// refusing semaphore decided.
func (s *Set) fail(key string, n int64, global *semaphore.Semaphore, err error) error {
	o, _ := semaphore.OutcomeOf(err)
	why := whyOf(err)
	if global != nil {
		why = errs.Label("global semaphore", global.Name(), global) + ": " + why
	}
	return s.failed(key, n, o, why, err)
}

// failed counts a call for n units of key that ended in o, and makes its error.
func (s *Set) failed(key string, n int64, o semaphore.Outcome, why string, matches ...error) error {
	switch o {
	case semaphore.TimedOut:
		s.timedOut.Add(1)
	case semaphore.Cancelled:
		s.cancelled.Add(1)
	case semaphore.TooLarge, semaphore.QueueFull:
		s.rejected.Add(1)
	}
	return &errs.Error{Subject: (*subject)(s), Op: "acquire", N: n, Of: "for key " + strconv.Quote(key),
		Why: why, Outcome: o, Matches: matches}
}

// failure makes an error that ends no call: `keyed "NAME": WHY`.
func (s *Set) failure(why string, matches ...error) error {
	return &errs.Error{Subject: (*subject)(s), Why: why, Matches: matches}
}

// whyOf is the reason an error of the module gives, without its subject and
// request, so that the set's message does not say twice what was asked; the
// whole text of any other error.
func whyOf(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Why
	}
	return err.Error()
}
