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

// fail makes the error of a call for n units of key, in shard sh, that a
// level refused with err, and counts it as Stats describes, by the outcome the
// refusing level decided. why is what the message says before the level's
// reason.
func (s *Set) fail(sh *shard, key string, n int64, why string, err error) error {
	o, _ := semaphore.OutcomeOf(err)
	switch o {
	case semaphore.TimedOut:
		sh.timedOut.Add(1)
	case semaphore.Cancelled:
		sh.cancelled.Add(1)
	case semaphore.TooLarge, semaphore.QueueFull:
		sh.rejected.Add(1)
	}
	return &errs.Error{Subject: (*subject)(s), Op: "acquire", N: n, Of: "for key " + strconv.Quote(key),
		Why: why + whyOf(err), Outcome: o, Matches: []error{err}}
}

// refused is fail for a call refused because the set is broken: the broken
// semaphore refused it with err. The observer hears of it (report) as a key's
// semaphore's observer hears of a call it refuses.
func (s *Set) refused(key string, n int64, err error, report bool) error {
	if report && s.observer != nil {
		o, _ := semaphore.OutcomeOf(err)
		s.observer.WaitEnded(s, key, semaphore.WaitEvent{Units: n, Outcome: o})
	}
	_, sh := s.shardOf(key)
	return s.fail(sh, key, n, "", err)
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
