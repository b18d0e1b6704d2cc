package amqpsem

import (
	"bytes"
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
	user   string
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	up     chan struct{} // closed while client-to-server traffic flows
	down   chan struct{} // closed while server-to-client traffic flows
	conns  map[net.Conn]struct{}
	done   bool
	lastUp time.Time     // when the last client-to-server bytes were written to the server
	cutOn  []byte        // cut both ways right after forwarding server-to-client bytes that hold it
	cut    chan struct{} // closed when cutOn was seen and the cut made
}

func newProxy(t testing.TB, endpoint string) *proxy {
	t.Helper()
	u, err := url.Parse(endpoint)
	require.NoError(t, err)
	userinfo := u.User.String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{user: userinfo, ln: ln, target: u.Host, up: make(chan struct{}), down: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.up)
	close(p.down)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// url is the broker's URL through the proxy.
func (p *proxy) url() string { return "amqp://" + p.user + "@" + p.ln.Addr().String() + "/" }

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
		go p.pipe(s, c, true)
		go p.pipe(c, s, false)
	}
}

// pipe copies src to dst, waiting at the gate of its direction before each
// write.
func (p *proxy) pipe(dst, src net.Conn, up bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.down
			if up {
				gate = p.up
			}
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			p.mu.Lock()
			if up {
				p.lastUp = time.Now()
			} else if p.cutOn != nil && bytes.Contains(buf[:n], p.cutOn) {
				p.cutOn = nil
				p.up, p.down = make(chan struct{}), make(chan struct{})
				close(p.cut)
			}
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// qosOK is the end of a basic.qos-ok frame: payload size 4, class 60, method
// 11, frame end. The holding connection's pings are the only basic.qos.
var qosOK = []byte{0, 0, 0, 4, 0, 60, 0, 11, 0xCE}

// cutAfterPing cuts both directions right after the next answer to a ping
// reaches the client, and returns when it has, with the time the server last
// received bytes from the client: the broker cannot close the connection for
// silence until a heartbeat timeout after it.
func (p *proxy) cutAfterPing(t testing.TB) (lastUp time.Time) {
	t.Helper()
	p.mu.Lock()
	p.cutOn, p.cut = qosOK, make(chan struct{})
	cut := p.cut
	p.mu.Unlock()
	select {
	case <-cut:
	case <-time.After(time.Minute):
		t.Fatal("no ping answer went through the proxy")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastUp
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
