package amqpsem

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Polling bounds: a waiter without events probes again after a backoff from
// pollMin, doubling to pollMax, each with up to a quarter of random jitter;
// with events it probes again after eventsSafetyPoll without one, in case an
// event was lost while its subscription was being set up again.
const (
	pollMin          = 20 * time.Millisecond
	pollMax          = time.Second
	eventsSafetyPoll = 5 * time.Second
	subscribeWait    = 2 * time.Second // a waiter waits this long for the first subscription, then polls
)

// eventExchange is the exchange of the rabbitmq_event_exchange plugin.
const eventExchange = "amq.rabbitmq.event"

func jitter(d time.Duration) time.Duration { return d + rand.N(d/4+1) }

// A waker tells a handle's waiters that slots may have come free. Waiters take
// the current generation channel before they probe, then wait on it: every
// notify closes it, so a change after the probe is never missed.
//
// With events, one consumer per handle, on the probing connection, receives
// the broker's queue.deleted and queue.created events (every queue's: the
// event exchange routes by event type only) and notifies on those of this
// semaphore's A and B queues. It starts with the handle's first wait, before
// that waiter probes, and stays until Close; if its channel closes it is set
// up again, notifying once (events may have been missed meanwhile).
type waker struct {
	s *Semaphore

	mu    sync.Mutex
	gen   chan struct{} // guarded by mu: closed by notify
	mode  Wakeup        // guarded by mu: WakeEvents or WakePolling once resolved
	live  bool          // guarded by mu: the consumer is subscribed now
	start chan struct{} // guarded by mu: closed once the consumer's first subscription ended, well or not
	done  bool          // guarded by mu: set by stop; no consumer starts after it
	wg    sync.WaitGroup
}

func newWaker(s *Semaphore) *waker {
	return &waker{s: s, gen: make(chan struct{})}
}

// resolve decides the mode: events when asked for or available, checked with
// a passive declare of the event exchange.
func (w *waker) resolve(ctx context.Context) error {
	mode := w.s.cfg.wakeup
	if mode != WakePolling {
		has, err := w.hasEvents(ctx)
		switch {
		case err != nil:
			return err
		case !has && mode == WakeEvents:
			return fmt.Errorf("the broker has no exchange %s: enable the rabbitmq_event_exchange plugin, or use WakeAuto or WakePolling", eventExchange)
		case has:
			mode = WakeEvents
		default:
			mode = WakePolling
		}
	}
	w.mu.Lock()
	w.mode = mode
	w.mu.Unlock()
	return nil
}

func (w *waker) hasEvents(ctx context.Context) (bool, error) {
	c, err := w.s.probe.connection(ctx)
	if err != nil {
		return false, err
	}
	ch, err := c.Channel()
	if err != nil {
		return false, err
	}
	defer ch.Close()
	err = ch.ExchangeDeclarePassive(eventExchange, amqp.ExchangeTopic, true, false, true, false, nil)
	switch {
	case err == nil:
		return true, nil
	case isCode(err, amqp.NotFound), isCode(err, amqp.AccessRefused):
		return false, nil
	}
	return false, err
}

// current returns the channel the next notify closes.
func (w *waker) current() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// notify wakes every waiter.
func (w *waker) notify() {
	w.mu.Lock()
	close(w.gen)
	w.gen = make(chan struct{})
	w.mu.Unlock()
}

// subscribe makes sure the event consumer runs, and reports whether it is
// subscribed now (false: the waiter polls).
func (w *waker) subscribe(ctx context.Context) bool {
	w.mu.Lock()
	if w.mode != WakeEvents || w.done {
		w.mu.Unlock()
		return false
	}
	start := w.start
	if start == nil {
		start = make(chan struct{})
		w.start = start
		w.wg.Add(1)
		go w.consume(start)
	}
	w.mu.Unlock()
	t := time.NewTimer(subscribeWait)
	defer t.Stop()
	select {
	case <-start:
	case <-t.C: // the broker is slow to answer (a blocked connection): poll meanwhile
		return false
	case <-ctx.Done():
		return false // the caller sees ctx end
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live
}

// consume subscribes to the events and notifies on this semaphore's, setting
// the subscription up again (after a backoff) whenever it ends, until Close.
func (w *waker) consume(start chan struct{}) {
	defer w.wg.Done()
	first := true
	backoff := pollMin
	for {
		deliveries, ch, err := w.bind()
		w.mu.Lock()
		w.live = err == nil
		if isCode(err, amqp.AccessRefused) {
			w.mode = WakePolling // not allowed to bind to the event exchange: poll for good
		}
		mode := w.mode
		if first {
			close(start)
			first = false
		}
		w.mu.Unlock()
		if mode != WakeEvents {
			return
		}
		if err == nil {
			backoff = pollMin
			w.notify() // events may have been missed before this subscription
			for d := range deliveries {
				name, _ := d.Headers["name"].(string)
				if _, _, ok := slotOf(w.s.name, name); ok {
					w.notify()
				}
			}
			w.mu.Lock()
			w.live = false
			w.mu.Unlock()
			_ = ch.Close()
		}
		t := time.NewTimer(jitter(backoff))
		select {
		case <-w.s.bg.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, pollMax)
	}
}

// bind declares a server-named exclusive queue on the probing connection,
// binds it to the event exchange for queue deletions and creations, and
// consumes it.
func (w *waker) bind() (<-chan amqp.Delivery, *amqp.Channel, error) {
	ctx, cancel := context.WithTimeout(w.s.bg, 30*time.Second)
	defer cancel()
	c, err := w.s.probe.connection(ctx)
	if err != nil {
		return nil, nil, err
	}
	ch, err := c.Channel()
	if err != nil {
		return nil, nil, err
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	for _, key := range []string{"queue.deleted", "queue.created"} {
		if err == nil {
			err = ch.QueueBind(q.Name, key, eventExchange, false, nil)
		}
	}
	var deliveries <-chan amqp.Delivery
	if err == nil {
		deliveries, err = ch.Consume(q.Name, "", true, true, false, false, nil)
	}
	if err != nil {
		_ = ch.Close()
		if errors.Is(err, amqp.ErrClosed) && w.s.isClosed() {
			err = ErrClosed
		}
		return nil, nil, err
	}
	return deliveries, ch, nil
}

// stop returns when the consumer has stopped (after the handle's background
// context ended and its probing connection closed); none starts after.
func (w *waker) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
	w.wg.Wait()
}

// modeNow returns the mode in use.
func (w *waker) modeNow() (Wakeup, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mode, w.live
}
