package netsem_test

import (
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/netsem"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const patience = 10 * time.Second // a bound for polling, never a synchronization

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dial connects a client and closes it when the test ends.
func dial(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), patience)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

type acceptResult struct {
	conn net.Conn
	err  error
}

func acceptAsync(ln net.Listener) <-chan acceptResult {
	ch := make(chan acceptResult, 1)
	go func() {
		c, err := ln.Accept()
		ch <- acceptResult{c, err}
	}()
	return ch
}

func waitForWaiters(t *testing.T, s *semaphore.Semaphore, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Waiters() == n }, patience, time.Millisecond,
		"waiters: %v", s)
}

func TestAccept_TakesAUnitBeforeAcceptingAndCloseGivesItBack(t *testing.T) {
	s := semaphore.New(2)
	ln := netsem.Listener(listen(t), s)
	dial(t, ln)
	c, err := ln.Accept()
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Available())
	require.NoError(t, c.Close())
	assert.Equal(t, int64(2), s.Available())
}

func TestConnClose_ReleasesExactlyOnceUnderConcurrentCalls(t *testing.T) {
	s := semaphore.New(2)
	ln := netsem.Listener(listen(t), s)
	dial(t, ln)
	dial(t, ln)
	held, err := ln.Accept()
	require.NoError(t, err)
	defer held.Close()
	c, err := ln.Accept()
	require.NoError(t, err)
	require.Zero(t, s.Available())

	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			<-start
			_ = c.Close() // an over-release would panic
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(1), s.Available(), "one unit back, not eight")
	assert.Error(t, c.Close(), "later calls return the wrapped Close error")
	assert.Equal(t, int64(1), s.Available())
}

func TestAccept_WaitsForAUnitBeforeAccepting(t *testing.T) {
	s := semaphore.New(1)
	ln := netsem.Listener(listen(t), s)
	dial(t, ln)
	dial(t, ln)
	first, err := ln.Accept()
	require.NoError(t, err)

	second := acceptAsync(ln)
	waitForWaiters(t, s, 1) // Accept is waiting for the unit, not in the kernel
	select {
	case r := <-second:
		t.Fatalf("Accept returned %v, %v while the only unit was held", r.conn, r.err)
	default:
	}
	require.NoError(t, first.Close())
	r := <-second
	require.NoError(t, r.err)
	require.NoError(t, r.conn.Close())
	assert.Equal(t, int64(1), s.Available())
}

// netutil: TestLimitListenerClose.
func TestClose_WakesAWaitingAcceptWithErrClosed(t *testing.T) {
	s := semaphore.New(1)
	ln := netsem.Listener(listen(t), s)
	dial(t, ln)
	held, err := ln.Accept()
	require.NoError(t, err)
	defer held.Close()

	waiting := acceptAsync(ln)
	waitForWaiters(t, s, 1)
	require.NoError(t, ln.Close())
	r := <-waiting
	require.ErrorIs(t, r.err, net.ErrClosed)
	var opErr *net.OpError
	require.ErrorAs(t, r.err, &opErr)
	assert.Equal(t, "accept", opErr.Op)
	assert.Nil(t, r.conn)
	assert.Zero(t, s.Waiters(), "the waiter left the semaphore")
	require.NoError(t, held.Close())
	assert.Equal(t, int64(1), s.Available(), "no unit leaked")
}

func TestClose_WakesAnAcceptBlockedInTheWrappedListener(t *testing.T) {
	s := semaphore.New(1)
	ln := netsem.Listener(listen(t), s)
	waiting := acceptAsync(ln) // holds the unit, blocked in the kernel
	require.Eventually(t, func() bool { return s.Available() == 0 }, patience, time.Millisecond)
	require.NoError(t, ln.Close())
	r := <-waiting
	require.ErrorIs(t, r.err, net.ErrClosed)
	assert.Equal(t, int64(1), s.Available(), "the unit was given back")
}

func TestAccept_AfterCloseFailsAtOnceEvenWithUnitsFree(t *testing.T) {
	s := semaphore.New(3)
	ln := netsem.Listener(listen(t), s)
	require.NoError(t, ln.Close())
	c, err := ln.Accept()
	assert.Nil(t, c)
	require.ErrorIs(t, err, net.ErrClosed)
	assert.Equal(t, int64(3), s.Available())
	assert.Equal(t, uint64(0), s.Stats().Acquired)
}

func TestBreak_FailsAWaitingAcceptAndEveryLaterOne(t *testing.T) {
	s := semaphore.New(1)
	ln := netsem.Listener(listen(t), s)
	dial(t, ln)
	held, err := ln.Accept()
	require.NoError(t, err)
	defer held.Close()

	cause := errors.New("draining")
	waiting := acceptAsync(ln)
	waitForWaiters(t, s, 1)
	s.Break(cause)
	r := <-waiting
	require.ErrorIs(t, r.err, semaphore.ErrBroken)
	require.ErrorIs(t, r.err, cause)
	assert.NotErrorIs(t, r.err, net.ErrClosed)

	_, err = ln.Accept()
	require.ErrorIs(t, err, semaphore.ErrBroken, "later Accepts fail at once")
	assert.NoError(t, held.Close(), "closing a conn after the break is fine")
}

func TestAccept_CloseIsReportedBeforeBreak(t *testing.T) {
	s := semaphore.New(1)
	ln := netsem.Listener(listen(t), s)
	s.Break(errors.New("draining"))
	require.NoError(t, ln.Close())
	_, err := ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
	assert.NotErrorIs(t, err, semaphore.ErrBroken)
}

// fakeListener fails every Accept with err, or blocks until closed when err is nil.
type fakeListener struct {
	err    error
	closed chan struct{}
	once   sync.Once
}

func (f *fakeListener) Accept() (net.Conn, error) {
	if f.err != nil {
		return nil, f.err
	}
	<-f.closed
	return nil, net.ErrClosed
}
func (f *fakeListener) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}
func (f *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// netutil: TestLimitListenerError.
func TestAccept_WrappedListenerErrorGivesTheUnitBack(t *testing.T) {
	s := semaphore.New(1)
	boom := errors.New("accept failed")
	ln := netsem.Listener(&fakeListener{err: boom, closed: make(chan struct{})}, s)
	for range 3 { // a leaked unit would make the second call wait forever
		_, err := ln.Accept()
		require.ErrorIs(t, err, boom)
		assert.Equal(t, int64(1), s.Available())
	}
}

func TestAccept_ZeroCapacityFailsWithErrTooLarge(t *testing.T) {
	ln := netsem.Listener(listen(t), semaphore.New(0))
	_, err := ln.Accept()
	require.ErrorIs(t, err, semaphore.ErrTooLarge)
}

func TestAccept_FullWaitListFailsWithErrQueueFull(t *testing.T) {
	s := semaphore.New(1, semaphore.WithMaxWaiters(0))
	ln := netsem.Listener(listen(t), s)
	dial(t, ln)
	held, err := ln.Accept()
	require.NoError(t, err)
	defer held.Close()
	_, err = ln.Accept()
	require.ErrorIs(t, err, semaphore.ErrQueueFull)
}

func TestListener_SharedSemaphoreBoundsBothAndCloseIsPerListener(t *testing.T) {
	s := semaphore.New(1)
	a := netsem.Listener(listen(t), s)
	b := netsem.Listener(listen(t), s)
	dial(t, a)
	dial(t, b)
	ca, err := a.Accept()
	require.NoError(t, err)
	waitingB := acceptAsync(b)
	waitForWaiters(t, s, 1)
	require.NoError(t, a.Close())
	require.NoError(t, ca.Close())
	r := <-waitingB
	require.NoError(t, r.err, "closing a did not close b")
	require.NoError(t, r.conn.Close())
	assert.Equal(t, int64(1), s.Available())
}

func TestLimitListener_AboveMaxUnitsIsClampedNotAPanic(t *testing.T) {
	for _, n := range []int{semaphore.MaxUnits, semaphore.MaxUnits + 1, math.MaxInt} {
		ln := netsem.LimitListener(listen(t), n)
		dial(t, ln)
		c, err := ln.Accept()
		require.NoError(t, err, "n=%d", n)
		require.NoError(t, c.Close())
	}
}

func TestLimitListener_PanicsBelowOne(t *testing.T) {
	ln := listen(t)
	assert.PanicsWithValue(t, "netsem: LimitListener: n must be at least 1, got 0", func() { netsem.LimitListener(ln, 0) })
	assert.Panics(t, func() { netsem.LimitListener(ln, -1) })
	assert.Panics(t, func() { netsem.Listener(nil, semaphore.New(1)) })
	assert.Panics(t, func() { netsem.Listener(ln, nil) })
}

// netutil: TestLimitListener. An HTTP server on a limited listener serves many
// clients, never more than the limit at once. Each handler holds its connection
// until the test lets it go, so the limit is reached and observed, not timed.
func TestLimitListener_HTTPServerServesAtMostNAtOnce(t *testing.T) {
	const limit, clients = 3, 12
	s := semaphore.New(limit)
	ln := netsem.Listener(listen(t), s)
	var active, peak, served atomic.Int64
	gate := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := active.Add(1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		<-gate
		active.Add(-1)
		served.Add(1)
		io.WriteString(w, "ok")
	})}
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()

	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: patience}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			resp, err := client.Get("http://" + ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	// The limit is reached and the accept loop then waits for a unit.
	require.Eventually(t, func() bool { return active.Load() == limit && s.Waiters() == 1 },
		patience, time.Millisecond)
	for range clients {
		gate <- struct{}{} // let one handler finish; at most limit run meanwhile
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(clients), served.Load())
	assert.Equal(t, int64(limit), peak.Load())
	require.NoError(t, srv.Close())
	require.ErrorIs(t, <-serveDone, http.ErrServerClosed)
	require.Eventually(t, func() bool { return s.Available() == limit }, patience, time.Millisecond,
		"every connection gave its unit back")
}
