package etcdsem

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rpcFailure is what a failed RPC means for the call that sent it. It is
// decided here, by classify, and nowhere else.
type rpcFailure uint8

const (
	// rpcUnknown: the request may or may not have been applied, and the same
	// request sent again may succeed: a timeout, a lost connection, no
	// leader, a server stopping or too busy. Acquire retries it.
	rpcUnknown rpcFailure = iota
	// rpcRefused: etcd (or the client) refused the request and would refuse
	// it again: too large, not permitted, the database full, the client
	// closed. The call ends with the error.
	rpcRefused
	// rpcLeaseGone: the server does not know the lease the request named: it
	// expired or was revoked, and every key on it is deleted. The lease is
	// lost.
	rpcLeaseGone
)

// classify says what err, a non-nil error of an etcd RPC, means. A context
// error is the end of an attempt's own timeout (the caller checks its own
// context first), so it is rpcUnknown.
func classify(err error) rpcFailure {
	err = rpctypes.Error(err) // a gRPC status of etcd's becomes its EtcdError
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return rpcLeaseGone
	case errors.Is(err, rpctypes.ErrTooManyRequests), errors.Is(err, rpctypes.ErrNotLeader):
		return rpcUnknown // their codes (ResourceExhausted, FailedPrecondition) say refused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return rpcUnknown
	}
	code := status.Code(err) // codes.Unknown for an error that is not gRPC's
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Unknown, codes.Internal:
		return rpcUnknown
	}
	return rpcRefused
}
