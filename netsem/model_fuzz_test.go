package netsem_test

import (
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/netsem"
)

// memListener is an in-memory listener: Accept takes the next client pushed with
// dial, or fails with net.ErrClosed once closed. Its channels make a blocked
// Accept durably blocked in a synctest bubble.
type memListener struct {
	clients chan net.Conn
	done    chan struct{}
	once    sync.Once
}

func newMemListener() *memListener {
	return &memListener{clients: make(chan net.Conn, 64), done: make(chan struct{})}
}

func (m *memListener) dial() {
	server, client := net.Pipe()
	client.Close() // only the server side matters here
	m.clients <- server
}

func (m *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.clients:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *memListener) Close() error   { m.once.Do(func() { close(m.done) }); return nil }
func (m *memListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// FuzzListenerModel drives a limited listener over an in-memory listener with a
// sequence of client arrivals, Accept calls, connection closes (some doubled),
// Break and Close, and checks after each step, once every goroutine is blocked,
// the accounting a model predicts: connections open never exceed the capacity;
// every unit is free, held by an open connection, or held by an Accept waiting
// for a client, and an Accept holds one only while no client is pending; after
// Close every Accept has failed with net.ErrClosed; after Break every Accept
// that had no unit has failed with semaphore.ErrBroken.
func FuzzListenerModel(f *testing.F) {
	f.Add([]byte{2, 0, 1, 1, 1, 0, 0, 0, 0, 2, 0, 2, 0, 3})
	f.Add([]byte{1, 1, 1, 1, 0, 0, 2, 0, 4, 0, 0, 1})
	f.Add([]byte{3, 0, 0, 1, 1, 1, 1, 0, 2, 1, 4, 0, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		capacity := int64(ops[0]%3) + 1
		ops = ops[1:]
		if len(ops) > 40 {
			ops = ops[:40]
		}
		synctest.Test(t, func(t *testing.T) {
			sem := semaphore.New(capacity)
			inner := newMemListener()
			ln := netsem.Listener(inner, sem)
			type acceptCall struct {
				done chan struct{}
				conn net.Conn
				err  error
			}
			var accepts []*acceptCall
			var open []net.Conn
			closed, broken := false, false
			cause := errors.New("broken by the fuzzer")

			check := func(step int) {
				synctest.Wait()
				running := 0
				for _, a := range accepts {
					select {
					case <-a.done:
						if a.err == nil && a.conn != nil {
							open = append(open, a.conn)
							a.conn = nil // counted once
						}
						if a.err != nil {
							switch {
							case closed && broken:
								require.True(t, errors.Is(a.err, net.ErrClosed) || errors.Is(a.err, semaphore.ErrBroken), "step %d: %v", step, a.err)
							case closed:
								require.ErrorIs(t, a.err, net.ErrClosed, "step %d", step)
							case broken:
								require.ErrorIs(t, a.err, semaphore.ErrBroken, "step %d", step)
							default:
								t.Fatalf("step %d: Accept failed on an open, healthy listener: %v", step, a.err)
							}
						}
					default:
						running++
					}
				}
				require.LessOrEqual(t, int64(len(open)), capacity, "step %d: open connections", step)
				if closed {
					require.Zero(t, running, "step %d: Accept still blocked after Close", step)
				}
				if broken || closed {
					return // units are no longer counted by a broken semaphore
				}
				holding := min(int64(running), capacity-int64(len(open)))
				require.Equal(t, capacity-int64(len(open))-holding, sem.Available(), "step %d: units", step)
				if holding > 0 {
					require.Zero(t, len(inner.clients), "step %d: a client is pending while an Accept holds a unit", step)
				}
				require.Equal(t, running-int(holding), sem.Waiters(), "step %d: waiters", step)
			}

			for step := 0; step+1 < len(ops); step += 2 {
				arg := int(ops[step+1])
				switch ops[step] % 5 {
				case 0:
					inner.dial()
				case 1:
					a := &acceptCall{done: make(chan struct{})}
					accepts = append(accepts, a)
					go func() {
						a.conn, a.err = ln.Accept()
						close(a.done)
					}()
				case 2:
					if len(open) == 0 {
						continue
					}
					i := arg % len(open)
					c := open[i]
					open = append(open[:i], open[i+1:]...)
					if arg%2 == 0 {
						var both sync.WaitGroup
						both.Go(func() { c.Close() })
						both.Go(func() { c.Close() })
						both.Wait()
					} else {
						c.Close()
					}
				case 3:
					if arg%4 == 0 { // Close is rarer: it ends the game
						require.NoError(t, ln.Close())
						closed = true
					}
				case 4:
					if arg%3 == 0 {
						sem.Break(cause)
						broken = true
					}
				}
				check(step)
			}
			// Wind down.
			ln.Close()
			closed = true
			check(len(ops))
			for _, c := range open {
				c.Close()
			}
			for len(inner.clients) > 0 {
				(<-inner.clients).Close()
			}
			if !broken {
				require.Equal(t, capacity, sem.Available(), "units leaked")
			}
		})
	})
}
