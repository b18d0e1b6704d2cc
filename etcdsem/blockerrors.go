package etcdsem

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
)

// Block mode's errors, built in this one place with the package's error
// helpers: they read and match as plain mode's do.

// A blockCall is what a block-mode acquire asked for.
type blockCall struct {
	try bool // TryAcquire; Acquire otherwise
	n   int64
}

func (c blockCall) op() string {
	if c.try {
		return tryOp(c.n)
	}
	return acquireOp(c.n)
}

// A waitEnd is why the pool ended a caller's wait.
type waitEnd struct {
	broken   bool   // the semaphore was broken, for reason
	reason   string // why it was broken
	shrunk   bool   // the capacity shrank below the request, to capacity
	capacity int64
	cause    error // otherwise: a block was lost (ErrLost) or the handle closed (ErrClosed)
}

func (p *blockPool) errClosed(c blockCall) error { return p.s.errorf(c.op(), "%w", ErrClosed) }

func (p *blockPool) errWait(ctx context.Context, c blockCall, start time.Time) error {
	return p.s.waitError(ctx, c.n, start)
}

func (p *blockPool) errRPC(ctx context.Context, c blockCall, start time.Time, err error) error {
	return p.s.rpcError(ctx, c.op(), c.n, start, err)
}

func (p *blockPool) errBroken(c blockCall, reason string) error {
	return p.s.errorf(c.op(), "broken: %s: %w", reason, semaphore.ErrBroken)
}

func (p *blockPool) errTooLarge(c blockCall, capacity int64) error {
	return p.s.errorf(c.op(), "more than the capacity %d: %w", capacity, semaphore.ErrTooLarge)
}

// errEnded is the error of a caller whose wait the pool ended.
func (p *blockPool) errEnded(c blockCall, e *waitEnd) error {
	switch {
	case e.broken:
		return p.errBroken(c, e.reason)
	case e.shrunk:
		return p.s.errorf(c.op(), "capacity shrunk to %d: %w", e.capacity, semaphore.ErrTooLarge)
	}
	return p.s.errorf(c.op(), "%w", e.cause)
}

// errHold is the error of op ("release", "return") on n units of a local
// grant of token, or of "units" (Units.Err) when n < 0, lost with cause.
func errHold(u *Units, op string, n int64, cause error) error {
	what := "units of token " + strconv.FormatInt(u.token, 10)
	if n >= 0 {
		what = op + " " + unitsText(n) + " of token " + strconv.FormatInt(u.token, 10)
	}
	return u.s.errorf(what, "%w", cause)
}

// errInsufficient is the error of a Return of m units of a local grant of
// token that holds fewer.
func errInsufficient(u *Units, m, held int64) error {
	return u.s.errorf("return "+unitsText(m)+" of token "+strconv.FormatInt(u.token, 10), "%d held: %w", held, semaphore.ErrInsufficientUnits)
}

// blockLost is the cause of a loss of the block of token.
func blockLost(token int64, cause error) error {
	return fmt.Errorf("block of token %d: %w", token, cause)
}
