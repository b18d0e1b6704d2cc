package etcdsem

import (
	"errors"
	"fmt"
)

// Errors of this package. Every error a Semaphore returns wraps a sentinel, of this
// package or of github.com/fairsem/semaphore (ErrBroken, ErrTimedOut, ErrTooLarge,
// ErrInsufficientUnits), and names the semaphore, the request and the reason:
//
//	etcdsem "jobs": acquire 2 units: timed out after 1.5s: semaphore: timed out
var (
	// ErrLost: units were lost without being released: the handle's lease was not
	// renewed in time (a partition, a stalled or lost cluster), or the key was
	// deleted by someone else. A waiter whose lease is lost fails with it too.
	ErrLost = errors.New("etcdsem: units lost")
	// ErrClosed: the Semaphore handle was closed.
	ErrClosed = errors.New("etcdsem: closed")
)

// errorf builds an error naming the semaphore: etcdsem "name": op: reason. The
// format may use %w any number of times.
func (s *Semaphore) errorf(op, format string, args ...any) error {
	return fmt.Errorf("etcdsem %q: %s: "+format, append([]any{s.name, op}, args...)...)
}
