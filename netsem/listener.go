package netsem

import (
	"context"
	"net"
	"strconv"

	"github.com/fairsem/semaphore"
)

// Listener returns a listener that accepts from l only while it holds a unit of s:
// Accept takes one unit, then accepts, and the returned connection releases the
// unit when it is closed (once, however many times Close is called).
//
// Accept blocks while no unit is free. It returns
//   - an error matching net.ErrClosed when the returned listener is closed, at
//     once, even while waiting for a unit;
//   - an error matching semaphore.ErrBroken and the cause when s is broken, at
//     once, even while waiting for a unit;
//   - an error matching semaphore.ErrTooLarge if s has capacity 0, or
//     semaphore.ErrQueueFull if s's wait list is bounded and full;
//   - l's Accept error, with the unit given back.
//
// Closing the returned listener closes l; it does not break or otherwise change
// s, which other listeners may share. Listener panics if l or s is nil.
func Listener(l net.Listener, s *semaphore.Semaphore) net.Listener {
	if l == nil || s == nil {
		panic("netsem: Listener: nil listener or semaphore")
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &listener{Listener: l, sem: s, closed: ctx, close: cancel}
}

// LimitListener returns a listener that accepts at most n simultaneous
// connections from l, like golang.org/x/net/netutil.LimitListener, on a
// semaphore of its own. An n above semaphore.MaxUnits (such as math.MaxInt, for
// "no limit") is taken as semaphore.MaxUnits: no process holds 2^44 connections.
// It panics if n < 1.
func LimitListener(l net.Listener, n int) net.Listener {
	if n < 1 {
		panic("netsem: LimitListener: n must be at least 1, got " + strconv.Itoa(n))
	}
	// In int64, where both fit whatever the size of int.
	capacity := min(int64(n), semaphore.MaxUnits)
	return Listener(l, semaphore.New(capacity, semaphore.WithName("netsem.LimitListener")))
}

type listener struct {
	net.Listener // the wrapped listener

	// Fixed after Listener.
	sem    *semaphore.Semaphore
	closed context.Context    // done once Close was called; Accept waits on it
	close  context.CancelFunc // ends closed; idempotent and safe for concurrent use
}

func (l *listener) Accept() (net.Conn, error) {
	units, err := l.sem.AcquireUnits(l.closed, 1)
	if err != nil {
		// Closed is checked first: a listener that was closed says so, whatever
		// else happened to the semaphore meanwhile.
		if l.closed.Err() != nil {
			return nil, &net.OpError{Op: "accept", Net: l.Addr().Network(), Addr: l.Addr(), Err: net.ErrClosed}
		}
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		units.Release()
		return nil, err
	}
	return &conn{Conn: c, units: units}, nil
}

// Close closes the wrapped listener and wakes any Accept waiting for a unit.
// It returns the wrapped listener's Close error.
func (l *listener) Close() error {
	l.close() // first, so that a waiting Accept reports the close, not a break
	return l.Listener.Close()
}

// conn is an accepted connection holding one unit until it is closed.
type conn struct {
	net.Conn
	units *semaphore.Units // Release is idempotent and safe for concurrent use
}

// Close closes the connection and, the first time, gives its unit back.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.units.Release()
	return err
}
