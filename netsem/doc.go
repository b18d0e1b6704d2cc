// Package netsem bounds how many connections a server handles at once with a
// semaphore taken in the accept loop.
//
//	ln = netsem.LimitListener(ln, 100) // or netsem.Listener(ln, sem) to share or Break sem
//	http.Serve(ln, handler)
//
// Accept takes one unit before it accepts, so while every unit is held the
// listener stops accepting and further clients wait in the kernel's listen
// backlog: the backpressure reaches them through TCP instead of piling up
// connections inside the process (the accept loop of Seastar servers). The
// returned connection gives its unit back when it is closed.
//
// # Decisions and differences from golang.org/x/net/netutil.LimitListener
//
//   - Listener takes a *semaphore.Semaphore, so the limit can be shared by
//     several listeners, changed with Resize, observed with Stats, and broken:
//     Break makes a waiting Accept, and every later one, fail with an error
//     that matches semaphore.ErrBroken and the cause. LimitListener(l, n) is the
//     one-line form with a semaphore of its own.
//   - Units are granted in arrival order: with several goroutines calling
//     Accept on one listener, or listeners sharing a semaphore, they take turns
//     in FIFO order (netutil's channel makes no such promise).
//   - Close wakes a waiting Accept at once, and an Accept after Close fails at
//     once, with a *net.OpError that matches net.ErrClosed, without calling the
//     wrapped listener's Accept. netutil instead calls it and relies on the
//     closed listener to fail. When Close and Break both happened, Accept reports
//     the close.
//   - LimitListener takes any n >= 1, as netutil does: an n above
//     semaphore.MaxUnits (math.MaxInt for "no limit") is taken as MaxUnits, a
//     limit no process reaches, rather than the core's panic for a capacity out
//     of range.
//   - LimitListener panics if n < 1, and Listener on a semaphore of capacity 0
//     fails Accept at once with an error matching semaphore.ErrTooLarge: a
//     listener that can never accept is a mistake to report, not a hang.
//     netutil.LimitListener(l, 0) blocks every Accept until Close.
//   - The connection's Close returns the wrapped connection's error on every
//     call and gives the unit back on the first one only, whichever goroutine
//     makes it; concurrent calls are safe. As with netutil, the returned
//     connection hides the concrete type (a *net.TCPConn's extra methods are
//     not reachable through it).
package netsem
