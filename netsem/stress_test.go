package netsem_test

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/netsem"
)

// TestStress_ManyAcceptorsClientsAndDoubleCloses runs several accept loops on one
// limited listener while many clients connect; handlers close their connection
// from two goroutines at once. Each round ends with either the listener's Close
// or the semaphore's Break while accept loops are waiting. Invariants: never more
// connections held than the limit, every accept loop ends with the expected
// error, and every unit comes back.
func TestStress_ManyAcceptorsClientsAndDoubleCloses(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		const limit, acceptors, clients = 3, 4, 40
		s := semaphore.New(limit)
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ln := netsem.Listener(inner, s)

		var held, peak atomic.Int64
		var handlers, loops sync.WaitGroup
		loopErrs := make(chan error, acceptors)
		for range acceptors {
			loops.Go(func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						loopErrs <- err
						return
					}
					now := held.Add(1)
					for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
					}
					handlers.Go(func() {
						buf := make([]byte, 1)
						_, _ = c.Read(buf) // the client's byte, or EOF
						held.Add(-1)
						var both sync.WaitGroup
						both.Go(func() { c.Close() })
						both.Go(func() { c.Close() })
						both.Wait()
					})
				}
			})
		}

		var dialers sync.WaitGroup
		for range clients {
			dialers.Go(func() {
				c, err := net.DialTimeout("tcp", inner.Addr().String(), patience)
				if err != nil {
					return // the listener may be gone by now
				}
				_, _ = c.Write([]byte{1})
				_ = c.SetReadDeadline(time.Now().Add(patience))
				_, _ = c.Read(make([]byte, 1)) // returns when the server closes
				c.Close()
			})
		}
		dialers.Wait()
		// Every client was served (or gave up); the accept loops now wait in
		// Accept (in the kernel, holding a unit, or for a unit), or are about to.
		useBreak := round%2 == 1
		cause := errors.New("round over")
		if useBreak {
			s.Break(cause)
			inner.Close() // loops blocked in the kernel need the listener closed
		} else {
			require.NoError(t, ln.Close())
		}
		loops.Wait()
		close(loopErrs)
		for err := range loopErrs {
			if useBreak {
				assert.True(t, errors.Is(err, cause) || errors.Is(err, net.ErrClosed), "%v", err)
			} else {
				assert.ErrorIs(t, err, net.ErrClosed)
			}
		}
		handlers.Wait()
		assert.LessOrEqual(t, peak.Load(), int64(limit))
		assert.Zero(t, s.Waiters())
		if !useBreak {
			assert.Equal(t, int64(limit), s.Available(), "round %d: units leaked", round)
		}
		ln.Close()
	}
}
