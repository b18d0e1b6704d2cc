package etcdsem

import (
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proxy is a TCP proxy on 127.0.0.1 that a test can make stop forwarding, in
// either direction, without closing anything: a network partition as the
// client and the server see it. Bytes read while a direction is held are
// forwarded when it is released.
type proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	up    chan struct{} // closed while client-to-server traffic flows
	down  chan struct{} // closed while server-to-client traffic flows
	slow  time.Duration // how long server-to-client bytes take: a slow link
	conns map[net.Conn]struct{}
	done  bool
}

func newProxy(t testing.TB, endpoint string) *proxy {
	t.Helper()
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: u.Host, up: make(chan struct{}), down: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.up)
	close(p.down)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) endpoint() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			c.Close()
			s.Close()
			return
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(s, c, func() chan struct{} { return p.gate(&p.up) }, func() time.Duration { return 0 })
		go p.pipe(c, s, func() chan struct{} { return p.gate(&p.down) }, p.latency)
	}
}

func (p *proxy) gate(ch *chan struct{}) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return *ch
}

func (p *proxy) latency() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slow
}

// A chunk is bytes read from one side, with the time they were read.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst: each chunk read waits at the gate, and until the
// link's latency has passed since it was read, before it is written. Chunks
// keep their order, and the latency of one does not add to the next's.
func (p *proxy) pipe(dst, src net.Conn, gate func() chan struct{}, latency func() time.Duration) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	chunks := make(chan chunk, 1024)
	done := make(chan struct{})
	defer close(done)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- chunk{buf[:n], time.Now()}:
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		<-gate()
		time.Sleep(time.Until(c.at.Add(latency())))
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}

// delay makes server-to-client bytes take d to cross: a slow link.
func (p *proxy) delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slow = d
}

// hold stops forwarding: client-to-server if up, server-to-client if down.
func (p *proxy) hold(up, down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if up {
		p.up = make(chan struct{})
	}
	if down {
		p.down = make(chan struct{})
	}
}

// release resumes forwarding in both directions.
func (p *proxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ch := range []chan struct{}{p.up, p.down} {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

// dropConns closes every connection: what the client sees when a partition
// heals after its connections timed out, or a server restarts.
func (p *proxy) dropConns() {
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
	p.ln.Close()
	p.release()
	p.dropConns()
	p.wg.Wait()
}
