package etcdsem

import (
	"errors"
	"fmt"
	"strconv"
)

// Errors of this package. Every error a Semaphore returns names the semaphore,
// what was asked and why, as `etcdsem "NAME": WHAT: WHY`, for example
//
//	etcdsem "jobs": acquire 2 units: timed out after 1.5s: timed out
//
// and wraps a sentinel. The meanings shared with the in-process semaphore wrap
// the sentinels of github.com/fairsem/semaphore, so one errors.Is check serves
// both: ErrBroken, ErrTimedOut, ErrTooLarge and ErrInsufficientUnits (etcdsem
// has no bound on waiters, so never ErrQueueFull). ErrLost and ErrClosed are
// this package's own, and match none of those: lost units and a closed handle
// say nothing of the semaphore's state, and another handle may still acquire.
var (
	// ErrLost: units were lost without being released: the handle's lease was not
	// renewed in time (a partition, a stalled or lost cluster), or the key was
	// deleted by someone else. A waiter whose lease is lost fails with it too.
	ErrLost = errors.New("units lost")
	// ErrClosed: the Semaphore handle was closed.
	ErrClosed = errors.New("closed")
)

// errorf builds an error naming the semaphore: `etcdsem "NAME": what: why`,
// where why is format with args. The format may use %w any number of times.
func (s *Semaphore) errorf(what, format string, args ...any) error {
	return fmt.Errorf("etcdsem %q: %s: "+format, append([]any{s.name, what}, args...)...)
}

// failed is the error of op whose RPC failed with err: ErrClosed if the handle
// closed meanwhile (Close ends every call in flight), otherwise rpcFailed's.
// s.mu must not be held.
func (s *Semaphore) failed(op string, err error) error {
	if cerr := s.errIfClosed(op); cerr != nil {
		return cerr
	}
	return s.rpcFailed(op, err)
}

// rpcFailed is the error of op whose RPC failed with err: err, said to be final
// when etcd refused the request for good.
func (s *Semaphore) rpcFailed(op string, err error) error {
	if classify(err) == rpcRefused {
		return s.errorf(op, "refused for good: %w", err)
	}
	return s.errorf(op, "%w", err)
}

// acquireOp is the what of an error of an acquire of n units.
func acquireOp(n int64) string { return "acquire " + unitsText(n) }

// unitsText is "1 unit" or "n units".
func unitsText(n int64) string {
	if n == 1 {
		return "1 unit"
	}
	return strconv.FormatInt(n, 10) + " units"
}

// allOf is an error that matches each of errs and reads as their texts, each
// once, joined by ": " on one line: a timeout is both semaphore.ErrTimedOut and
// context.DeadlineExceeded (and the context's cause), and says so in one line.
func allOf(errs ...error) error {
	var text string
	seen := make(map[string]bool, len(errs))
	for _, err := range errs {
		if t := err.Error(); !seen[t] {
			seen[t] = true
			if text != "" {
				text += ": "
			}
			text += t
		}
	}
	return &multiError{text: text, errs: errs}
}

type multiError struct {
	text string
	errs []error
}

func (e *multiError) Error() string   { return e.text }
func (e *multiError) Unwrap() []error { return e.errs }
