package amqpsem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A session is the connection that holds a handle's B queues, with a loss
// detector that errs early.
//
// The loss rule. An exclusive queue lives as long as the connection that
// declared it, so another client can declare a holder's B queue only after
// the broker has closed the holder's connection. A broker closes a connection
// on its own (the holder neither closed it nor crashed) when it has received
// nothing on it for the heartbeat timeout T: RabbitMQ checks every T for bytes
// received since the last check and closes after two checks find none, so
// never sooner than T after the last byte it received. The session pings the
// broker every T/3 with a request it must answer, noting the time just before
// sending: when the answer arrives, the broker received the request after that
// time, so it cannot close the connection before send time + T. Lost closes at
// that instant less the safety margin (a late timer, a clock running at
// another rate over one T): before the broker can drop the B queues, so before
// anyone else can take the slots. amqp091 itself notices a silent broker only
// after 1.5 T, too late for that.
//
// A connection the broker closes for another reason (a restart, an operator
// closing it, a TCP error seen by the broker) is noticed when the client sees
// it close; the B queues are gone by then, as the broker deletes them when it
// closes the connection. Lost closes then too.
type session struct {
	conn   *amqp.Connection
	hb     time.Duration // the negotiated heartbeat timeout
	margin time.Duration
	lost   chan struct{} // closed once, when the session is (believed) lost
	stop   chan struct{} // closed by close
	done   chan struct{} // closed when the pinger has returned

	onLost func(*session) // run once, on the pinger's or the timer's goroutine

	mu       sync.Mutex
	deadline time.Time // guarded by mu: loss is declared when it passes without a ping answered
	cause    error     // guarded by mu: why lost was closed; nil while open
	timer    *time.Timer
	idle     []*channel // guarded by mu: open channels for declares, checks and deletes
}

// A channel of the holding connection, lent to one request at a time.
type channel struct {
	*amqp.Channel
	closed chan *amqp.Error // the broker's reason when it closes the channel
	reason *amqp.Error      // read from closed
}

// cause returns the broker's error that closed the channel, in place of err
// when err only says that the channel is closed (amqp091.ErrClosed): a
// request sent without waiting for its answer (nowait) that fails closes the
// channel, and the request after it may learn only that. amqp091 marks the
// channel closed before it tells the listeners why, so cause waits for the
// reason, which comes at once (or for the listener's close, when the
// connection closed).
func (c *channel) cause(err error) error {
	if err != amqp.ErrClosed {
		return err
	}
	if c.reason == nil {
		select {
		case c.reason = <-c.closed:
		case <-time.After(5 * time.Second):
		}
	}
	if c.reason != nil {
		return c.reason
	}
	return err
}

// dial opens a connection to url with cfg, bounded by ctx: the TCP connect by
// ctx, the AMQP handshake by ctx's deadline (30s without one), and ctx's end
// abandons a handshake still running.
func dial(ctx context.Context, url string, cfg amqp.Config) (*amqp.Connection, error) {
	if cfg.Dial == nil {
		cfg.Dial = func(network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			deadline, ok := ctx.Deadline()
			if !ok || time.Until(deadline) > 30*time.Second {
				deadline = time.Now().Add(30 * time.Second)
			}
			// Cleared by amqp091 once the handshake is done.
			if err := c.SetDeadline(deadline); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}
	}
	type result struct {
		c   *amqp.Connection
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := amqp.DialConfig(url, cfg)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, &dialError{r.err}
		}
		return r.c, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				_ = r.c.CloseDeadline(time.Now())
			}
		}()
		return nil, ctx.Err()
	}
}

// A dialError is a failure to connect. An acquire that waits dials again
// after one: the broker may be restarting (a starting broker refuses logins
// for a moment), and a handle that New connected had working credentials.
type dialError struct{ err error }

func (e *dialError) Error() string { return "connect: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// openSession dials the holding connection and starts its pinger. onLost runs
// once when the session is lost (not when it is closed).
func openSession(ctx context.Context, url string, cfg amqp.Config, margin time.Duration, onLost func(*session)) (*session, error) {
	sent := time.Now()
	conn, err := dial(ctx, url, cfg)
	if err != nil {
		return nil, err
	}
	hb := conn.Config.Heartbeat
	if hb <= 0 {
		_ = conn.CloseDeadline(time.Now())
		return nil, errors.New("the broker and the client agreed on no heartbeat: holders could not be told of a loss in time")
	}
	if margin < 0 {
		margin = max(hb/10, 500*time.Millisecond)
	}
	if margin >= hb {
		margin = hb / 2 // a margin as long as the timeout would declare the loss at once
	}
	pingCh, err := conn.Channel()
	if err != nil {
		_ = conn.CloseDeadline(time.Now())
		return nil, err
	}
	s := &session{
		conn:   conn,
		hb:     hb,
		margin: margin,
		lost:   make(chan struct{}),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		onLost: onLost,
	}
	// The handshake was answered: the broker received it after sent.
	s.mu.Lock()
	s.deadline = sent.Add(hb - margin)
	s.timer = time.AfterFunc(time.Until(s.deadline), s.checkDeadline)
	s.mu.Unlock()
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	go s.ping(pingCh, closed)
	return s, nil
}

// checkDeadline runs on the timer: it declares the session lost if the
// deadline passed, and otherwise re-arms the timer (pings only move the
// deadline later, so the timer may fire early, never late).
func (s *session) checkDeadline() {
	s.mu.Lock()
	if s.cause != nil {
		s.mu.Unlock()
		return
	}
	if left := time.Until(s.deadline); left > 0 {
		s.timer.Reset(left)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.fail(fmt.Errorf("no answer from the broker within the heartbeat timeout of %v less a margin of %v: %w", s.hb, s.margin, ErrLost))
}

// fail declares the session lost with cause, once, and closes the connection
// so that every request waiting on it ends.
func (s *session) fail(cause error) {
	s.mu.Lock()
	if s.cause != nil {
		s.mu.Unlock()
		return
	}
	s.cause = cause
	s.timer.Stop()
	close(s.lost)
	s.mu.Unlock()
	s.onLost(s)
	go func() { _ = s.conn.CloseDeadline(time.Now()) }()
}

// err returns why the session was lost or closed, or nil.
func (s *session) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause
}

// ping asks the broker for an answer every third of the heartbeat timeout
// (sooner after a failure) and moves the deadline to the send time of each
// answered request plus the timeout less the margin. basic.qos is the
// request: any user may send it and it changes nothing.
func (s *session) ping(ch *amqp.Channel, closed chan *amqp.Error) {
	defer close(s.done)
	interval := s.hb / 3
	next := time.NewTimer(interval)
	defer next.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.lost:
			return
		case e, ok := <-closed:
			why := "the connection closed"
			if ok && e != nil {
				why += ": " + e.Error()
			}
			s.fail(fmt.Errorf("%s: %w", why, ErrLost))
			return
		case <-next.C:
		}
		sent := time.Now()
		if err := ch.Qos(0, 0, false); err != nil {
			if s.conn.IsClosed() {
				continue // the close notice says why
			}
			if ch, err = s.conn.Channel(); err != nil {
				next.Reset(interval / 10)
				continue
			}
			next.Reset(0)
			continue
		}
		s.mu.Lock()
		if d := sent.Add(s.hb - s.margin); d.After(s.deadline) {
			s.deadline = d
		}
		s.mu.Unlock()
		next.Reset(max(0, time.Until(sent.Add(interval))))
	}
}

// channel returns an open channel of the connection for one request at a
// time; put it back with release.
func (s *session) channel() (*channel, error) {
	s.mu.Lock()
	for len(s.idle) > 0 && s.cause == nil {
		c := s.idle[len(s.idle)-1]
		s.idle = s.idle[:len(s.idle)-1]
		if !c.IsClosed() {
			s.mu.Unlock()
			return c, nil
		}
	}
	cause := s.cause
	s.mu.Unlock()
	if cause != nil {
		return nil, cause
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return nil, err
	}
	return &channel{Channel: ch, closed: ch.NotifyClose(make(chan *amqp.Error, 1))}, nil
}

// release puts back a channel after a request. A channel the request's error
// closed (the broker closes a channel on any error it answers) is dropped.
func (s *session) release(c *channel) {
	if c.IsClosed() {
		return
	}
	s.mu.Lock()
	if s.cause == nil {
		s.idle = append(s.idle, c)
	}
	s.mu.Unlock()
}

// close stops the pinger and closes the connection, which deletes every B
// queue declared on it. It does not close lost: the slots were given up.
func (s *session) close() {
	s.mu.Lock()
	if s.cause == nil {
		s.cause = ErrClosed
		s.timer.Stop()
	}
	s.mu.Unlock()
	close(s.stop)
	d := 5 * time.Second
	if s.hb < d {
		d = s.hb
	}
	_ = s.conn.CloseDeadline(time.Now().Add(d))
	<-s.done
}
