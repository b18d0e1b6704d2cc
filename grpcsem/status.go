package grpcsem

import (
	"context"
	"errors"
	"github.com/fairsem/semaphore/adaptive"
	"math/rand/v2"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fairsem/semaphore"
)

// PushbackKey is the trailer key of gRPC's server pushback (gRFC A6): a
// non-negative number of milliseconds after which the client may retry, or a
// negative number for "do not retry".
const PushbackKey = "grpc-retry-pushback-ms"

// refusal is the one table from an Admit error to the call's status and
// pushback trailer (documented in the package documentation). ctx is the
// call's own context; err is the limiter's error; pushback is the trailer value,
// "" for none. The row is chosen by how the limiter said the call ended
// (semaphore.OutcomeOf), never by the sentinels err matches: a context's cause
// can match any of them.
func (c *config) refusal(ctx context.Context, err error) (st *status.Status, pushback string) {
	overload := func(reason string) (*status.Status, string) {
		return c.status(c.code, "overloaded: "+reason, err), c.pushbackValue()
	}
	if ctx.Err() != nil {
		// The call's own context ended: the client gave up, or its deadline
		// passed. It sees its own error; the status follows gRPC's mapping.
		return status.FromContextError(ctx.Err()), ""
	}
	o, ok := semaphore.OutcomeOf(err)
	switch {
	case !ok:
		if st, ok := status.FromError(err); ok {
			return st, "" // a limiter that chose its status
		}
	case o == semaphore.TooLarge:
		// It would never fit: a retry cannot help, so tell the client not to.
		return c.status(codes.ResourceExhausted, "request larger than capacity", err), "-1"
	case o == semaphore.Broken:
		// Going away: no pushback, so that the client backs off by itself and
		// its retry may reach another backend.
		return c.status(c.code, "not admitting: broken", err), ""
	case o == semaphore.Shed:
		return overload("shed")
	case o == semaphore.QueueFull:
		return overload("wait queue full")
	case o == semaphore.TimedOut:
		// The call's context is alive, so the deadline was WithTimeout's.
		return overload("not admitted within " + c.timeout.String())
	}
	return c.status(codes.Unknown, "admission failed", err), ""
}

// status builds a refusal's status. A server's message is the reason only: the
// limiter's error names the semaphore or controller, which stays on the server.
// A client's keeps the whole error, which stays in the process.
func (c *config) status(code codes.Code, reason string, err error) *status.Status {
	if c.client {
		return status.New(code, "grpcsem: "+err.Error())
	}
	return status.New(code, "grpcsem: "+reason)
}

// pushbackValue renders the pushback trailer: the base, scaled by a random
// factor in [0.8, 1.2), in whole milliseconds; "" when there is none.
func (c *config) pushbackValue() string {
	if c.pushback <= 0 {
		return ""
	}
	d := time.Duration(float64(c.pushback) * (0.8 + 0.4*rand.Float64()))
	return strconv.FormatInt(int64(d/time.Millisecond), 10)
}

// pushbackTrailer is the trailer carrying value.
func pushbackTrailer(value string) metadata.MD { return metadata.Pairs(PushbackKey, value) }

// verdict judges how an admitted call ended, from its error; panicked
// calls never get here (they are Ignore). A deadline is TimedOut, which the
// adaptive limiter's Done judges as it judges every timeout.
func verdict(err error) adaptive.Verdict {
	if err == nil {
		return adaptive.Success
	}
	if errors.Is(err, context.Canceled) {
		return adaptive.Ignore
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return adaptive.TimedOut
	}
	switch status.Code(err) {
	case codes.Canceled:
		return adaptive.Ignore
	case codes.DeadlineExceeded:
		return adaptive.TimedOut
	case codes.ResourceExhausted, codes.Unavailable:
		return adaptive.Dropped
	}
	return adaptive.Success
}
