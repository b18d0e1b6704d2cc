package amqpsem

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A prober tells which queues exist, as the protocol recommends: by publishing
// to each, mandatory and with confirms, through the default exchange. A queue
// that does not exist makes the broker return the message (NO_ROUTE) before it
// confirms it; one that exists takes it. The message expires at once
// (expiration "0"), so a probe leaves nothing in a queue. Unlike a passive
// declare, a probe of a missing queue, or of another connection's exclusive
// queue, does not close the channel, so one batch of probes costs one round
// trip whatever it finds.
//
// The prober has a connection of its own, apart from the session that holds
// the B queues: RabbitMQ blocks a connection that publishes during a resource
// alarm, stopping every request on it, and a blocked holding connection could
// neither ping nor release.
type prober struct {
	url string
	cfg amqp.Config

	mu      sync.Mutex
	conn    *amqp.Connection // guarded by mu; nil before the first probe and after it closed
	dialing chan struct{}    // guarded by mu: closed when the dial in flight ends; nil when none is
	blocked chan struct{}    // guarded by mu: closed while the broker blocks the connection
	reason  string           // guarded by mu: the broker's reason for the block
	idle    []*probeChannel  // guarded by mu
	dropped int              // guarded by mu: channels left open after an abandoned batch
	closed  bool             // guarded by mu; terminal
	seq     uint64           // guarded by mu: numbers probes, to match returns to them
}

type probeChannel struct {
	conn    *amqp.Connection
	ch      *amqp.Channel
	returns chan amqp.Return
	closed  chan *amqp.Error
}

// maxBatch bounds the probes of one batch: each probe may be returned, and
// the returns must fit in the channel's buffer until the batch is confirmed
// (amqp091 blocks its reader on a full one).
const maxBatch = 256

func newProber(url string, cfg amqp.Config) *prober {
	return &prober{url: url, cfg: cfg, blocked: make(chan struct{})}
}

// connection returns the open connection, dialling one if there is none. One
// caller dials while the others wait for it, each as long as its ctx lets it.
func (p *prober) connection(ctx context.Context) (*amqp.Connection, error) {
	for {
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			return nil, ErrClosed
		case p.conn != nil && !p.conn.IsClosed():
			c := p.conn
			p.mu.Unlock()
			return c, nil
		case p.dialing != nil:
			ch := p.dialing
			p.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		p.conn, p.idle, p.dropped = nil, nil, 0
		done := make(chan struct{})
		p.dialing = done
		p.mu.Unlock()

		c, err := dial(ctx, p.url, p.cfg)
		p.mu.Lock()
		p.dialing = nil
		close(done)
		if err == nil && p.closed {
			err = ErrClosed
			_ = c.CloseDeadline(time.Now())
		}
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.conn = c
		p.mu.Unlock()
		go p.watchBlocked(c, c.NotifyBlocked(make(chan amqp.Blocking, 4)))
		return c, nil
	}
}

// watchBlocked follows the broker's connection.blocked and unblocked notices
// for c until c closes.
func (p *prober) watchBlocked(c *amqp.Connection, ch chan amqp.Blocking) {
	for b := range ch {
		p.mu.Lock()
		if p.conn == c {
			p.setBlockedLocked(b.Active, b.Reason)
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	if p.conn == c || p.conn == nil {
		p.setBlockedLocked(false, "")
	}
	p.mu.Unlock()
}

func (p *prober) setBlockedLocked(active bool, reason string) {
	select {
	case <-p.blocked:
		if !active {
			p.blocked, p.reason = make(chan struct{}), ""
		}
	default:
		if active {
			close(p.blocked)
			p.reason = reason
		}
	}
}

// blockedNow returns a channel closed while the broker blocks the connection,
// and the reason when it already does.
func (p *prober) blockedNow() (<-chan struct{}, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.blocked:
		return p.blocked, p.reason, true
	default:
		return p.blocked, "", false
	}
}

// channel returns an idle channel of the connection, in confirm mode, or
// opens one. Opening is a request the broker must read: it ends with ctx, and
// with ErrBlocked when the broker blocks the connection meanwhile (it then
// reads nothing from it).
func (p *prober) channel(ctx context.Context) (*probeChannel, error) {
	c, err := p.connection(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	for len(p.idle) > 0 {
		pc := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !pc.ch.IsClosed() && pc.conn == c {
			p.mu.Unlock()
			return pc, nil
		}
	}
	blocked := p.blocked
	p.mu.Unlock()
	done := make(chan openResult, 1)
	go func() {
		ch, err := c.Channel()
		if err == nil {
			err = ch.Confirm(false)
		}
		if err != nil {
			done <- openResult{err: err}
			return
		}
		done <- openResult{pc: &probeChannel{conn: c, ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, maxBatch+16)),
			closed: ch.NotifyClose(make(chan *amqp.Error, 1))}}
	}()
	select {
	case r := <-done:
		return r.pc, r.err
	case <-ctx.Done():
		go p.reap(done)
		return nil, ctx.Err()
	case <-blocked:
		go p.reap(done)
		_, reason, _ := p.blockedNow()
		return nil, fmt.Errorf("%w: %s", ErrBlocked, reason)
	}
}

type openResult struct {
	pc  *probeChannel
	err error
}

// reap drops a channel whose opening was abandoned, once it opens.
func (p *prober) reap(done <-chan openResult) {
	if r := <-done; r.pc != nil {
		p.drop(r.pc)
	}
}

func (p *prober) put(pc *probeChannel) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && p.conn == pc.conn && !pc.ch.IsClosed() {
		p.idle = append(p.idle, pc)
	}
}

// drop forgets a channel whose batch was abandoned: its confirms and returns
// may still come. It is left open (closing it would wait on the broker) until
// too many are, when the connection is replaced.
func (p *prober) drop(pc *probeChannel) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != pc.conn {
		return
	}
	if p.dropped++; p.dropped > 64 {
		c := p.conn
		p.conn, p.idle, p.dropped = nil, nil, 0
		go func() { _ = c.CloseDeadline(time.Now().Add(time.Second)) }()
	}
}

// errNoAnswer: the broker left a request unanswered for a heartbeat timeout
// on a connection that is not blocked; the connection was closed.
var errNoAnswer = errors.New("the broker does not answer")

// abandon closes c, which the broker stopped answering, and forgets it.
func (p *prober) abandon(c *amqp.Connection) {
	p.mu.Lock()
	if p.conn == c {
		p.conn, p.idle, p.dropped = nil, nil, 0
	}
	p.mu.Unlock()
	_ = c.CloseDeadline(time.Now())
}

// exists reports, for each queue, whether it exists, in one round trip per
// maxBatch queues. It fails with ErrBlocked at once while the broker blocks
// the connection, and when a block starts before the batch is confirmed.
func (p *prober) exists(ctx context.Context, queues []string) ([]bool, error) {
	out := make([]bool, 0, len(queues))
	for len(queues) > 0 {
		k := min(len(queues), maxBatch)
		got, err := p.batch(ctx, queues[:k])
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		queues = queues[k:]
	}
	return out, nil
}

func (p *prober) batch(ctx context.Context, queues []string) ([]bool, error) {
	if _, reason, now := p.blockedNow(); now {
		return nil, fmt.Errorf("%w: %s", ErrBlocked, reason)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pc, err := p.channel(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	first := p.seq
	p.seq += uint64(len(queues))
	blocked := p.blocked
	p.mu.Unlock()
	// The broker confirms a probe at once unless it stopped reading the
	// connection: blocked (it says so, connection.blocked) or not (flow
	// control, an overload): a heartbeat timeout without a confirm ends the
	// batch and the connection, and the next probe dials a new one.
	wait := pc.conn.Config.Heartbeat
	if wait <= 0 {
		wait = 30 * time.Second
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	confirms := make([]*amqp.DeferredConfirmation, len(queues))
	for i, q := range queues {
		id := strconv.FormatUint(first+uint64(i), 36)
		confirms[i], err = pc.ch.PublishWithDeferredConfirm("", q, true, false, amqp.Publishing{Expiration: "0", MessageId: id})
		if err != nil {
			p.drop(pc)
			return nil, err
		}
	}
	for _, dc := range confirms {
		select {
		case <-dc.Done():
			if !dc.Acked() {
				p.drop(pc)
				return nil, errors.New("the broker did not confirm a probe (basic.nack)")
			}
		case <-ctx.Done():
			p.drop(pc)
			return nil, ctx.Err()
		case <-blocked:
			p.drop(pc)
			_, reason, _ := p.blockedNow()
			return nil, fmt.Errorf("%w: %s", ErrBlocked, reason)
		case e := <-pc.closed:
			p.drop(pc)
			if e != nil {
				return nil, e
			}
			return nil, amqp.ErrClosed
		case <-timeout.C:
			p.abandon(pc.conn)
			return nil, fmt.Errorf("%w: no confirm of %d probes within %v", errNoAnswer, len(queues), wait)
		}
	}
	// Every probe is confirmed; the broker sends a return before the confirm,
	// and amqp091 hands it to the buffered channel before it reads on, so the
	// returns of this batch are all in the buffer now.
	out := make([]bool, len(queues))
	for i := range out {
		out[i] = true
	}
	for {
		select {
		case r := <-pc.returns:
			if n, err := strconv.ParseUint(r.MessageId, 36, 64); err == nil && n >= first && n < first+uint64(len(queues)) {
				out[n-first] = false
			}
			continue
		default:
		}
		break
	}
	p.put(pc)
	return out, nil
}

// close closes the connection; probes in flight fail. A connection the
// broker blocks is closed without the closing handshake: the broker would not
// read it.
func (p *prober) close() {
	p.mu.Lock()
	p.closed = true
	c := p.conn
	p.conn, p.idle = nil, nil
	deadline := time.Now().Add(2 * time.Second)
	select {
	case <-p.blocked:
		deadline = time.Now()
	default:
	}
	p.mu.Unlock()
	if c != nil {
		_ = c.CloseDeadline(deadline)
	}
}
