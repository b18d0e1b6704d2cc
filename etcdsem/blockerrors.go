package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
)

// Block mode's errors, built in this one place with the package's error
// helpers: they read, match and carry outcomes as plain mode's do.

// A blockCall is what a block-mode acquire asked for.
type blockCall struct {
	try bool // TryAcquire; Acquire otherwise
	n   int64
}

func (c blockCall) call() call {
	if c.try {
		return tryCall(c.n)
	}
	return acquireCall(c.n)
}

// A waitEnd is why the pool ended its callers' waits.
type waitEnd struct {
	broken   bool   // the semaphore was broken, for reason
	reason   string // why it was broken
	shrunk   bool   // the capacity shrank below the request, to capacity
	capacity int64
	refused  error // etcd refused the block request for good, with this error of it
	cause    error // otherwise: a block was lost (ErrLost) or the handle closed (ErrClosed)
}

// Error makes a waitEnd the cause the pool breaks an epoch's core with, which
// each of the core's waiters then fails with (see errWaited).
func (e *waitEnd) Error() string {
	switch {
	case e.broken:
		return "broken: " + e.reason
	case e.shrunk:
		return "capacity shrunk to " + strconv.FormatInt(e.capacity, 10)
	case e.refused != nil:
		return e.refused.Error()
	}
	return e.cause.Error()
}

func (p *blockPool) errClosed(c blockCall) error { return p.h.closedError(c.call()) }

func (p *blockPool) errWait(ctx context.Context, c blockCall, start time.Time) error {
	return p.h.waitError(ctx, c.call(), start)
}

func (p *blockPool) errRPC(ctx context.Context, c blockCall, start time.Time, err error) error {
	return p.h.rpcError(ctx, c.call(), start, err)
}

func (p *blockPool) errBroken(c blockCall, reason string) error {
	return p.h.brokenError(c.call(), reason)
}

func (p *blockPool) errTooLarge(c blockCall, capacity int64) error {
	return p.h.tooLargeError(c.call(), capacity)
}

// errEnded is the error of a caller whose wait the pool ended.
func (p *blockPool) errEnded(c blockCall, e *waitEnd) error {
	switch {
	case e.broken:
		return p.errBroken(c, e.reason)
	case e.shrunk:
		return p.h.fail(c.call(), semaphore.TooLarge, "capacity shrunk to "+strconv.FormatInt(e.capacity, 10)+": "+semaphore.ErrTooLarge.Error(),
			semaphore.ErrTooLarge)
	case e.refused != nil:
		// The block request's error says why etcd refused and matches what
		// it refused with; the caller's names the caller's units.
		var be *errs.Error
		if errors.As(e.refused, &be) {
			return p.h.fail(c.call(), nil, be.Why, be.Matches...)
		}
		return p.h.fail(c.call(), nil, e.refused.Error(), e.refused)
	}
	return p.h.fail(c.call(), nil, e.cause.Error(), e.cause)
}

// blockLost is the cause of a loss of the block of token.
func blockLost(token int64, cause error) error {
	return fmt.Errorf("block of token %d: %w", token, cause)
}
