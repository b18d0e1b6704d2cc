package amqpsem

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The requests a handle makes on its holding connection: it declares its B
// queues there (exclusive to it), checks the A queues of the slots it holds
// there, as the protocol's verification asks ("on the connection and channel
// that acquired it"), and deletes its B queues there. None of them publishes,
// so the broker never blocks this connection in a resource alarm: a holder can
// verify and release during one.
//
// Checks are passive declares of A queues: an A queue is durable and not
// exclusive, so a passive declare answers whether it exists, closing the
// channel when it does not (NOT_FOUND), which costs a new channel only then.
// Requests that follow one another on a channel are pipelined where the
// answer to the last one tells what the others did: the broker handles a
// channel's requests in order and closes the channel at the first that fails,
// ignoring the rest, so the answer to the last request sent means every
// request before it succeeded.

// errGone says that one of the A queues checked is missing: its slot was
// removed from the semaphore.
var errGone = errors.New("an A queue checked is missing")

// declareHold declares slot's B queue, exclusive to sess's connection, and
// waits for the answer: nil, the broker's RESOURCE_LOCKED when another
// connection holds it, or another error.
func (s *Semaphore) declareHold(sess *session, slot int) error {
	c, err := sess.channel()
	if err != nil {
		return err
	}
	_, err = c.QueueDeclare(holdQueue(s.name, slot), false, false, true, false, nil)
	err = c.cause(err)
	sess.release(c)
	return err
}

// declareAndCheck declares slot's B queue, exclusive to sess's connection,
// and then checks that the A queue of each of check exists: the protocol's
// acquire of its last slot and the verification of every slot it took, in one
// round trip. The declare and each check but the last go out without waiting
// for their answers; the answer to the last check means the declare was made
// and every A queue exists.
//
// It returns nil then; an error wrapping errGone when the B queue was declared
// and an A queue is missing (checkSlots tells which); RESOURCE_LOCKED when
// another connection holds the B queue or, absurdly, an A queue (a queue of
// that name declared exclusive): the caller cannot tell which, so it drops
// the B queue (dropHold) before it counts the slot as another's; or another
// error, after which the B queue may exist.
func (s *Semaphore) declareAndCheck(sess *session, slot int, check []int) error {
	c, err := sess.channel()
	if err != nil {
		return err
	}
	defer sess.release(c)
	if _, err := c.QueueDeclare(holdQueue(s.name, slot), false, false, true, true, nil); err != nil {
		return c.cause(err)
	}
	err = s.passiveChecks(c, check)
	if isCode(err, amqp.NotFound) {
		return fmt.Errorf("%w: %w", errGone, err)
	}
	return err
}

// passiveChecks sends a passive declare of the A queue of each slot on c,
// waiting for the answer to the last only.
func (s *Semaphore) passiveChecks(c *channel, slots []int) error {
	for i, sl := range slots {
		last := i == len(slots)-1
		if _, err := c.QueueDeclarePassive(slotQueue(s.name, sl), true, false, false, !last, nil); err != nil {
			return c.cause(err)
		}
	}
	return nil
}

// checkSlots returns those of slots whose A queue is missing (or is no slot
// queue: a queue of that name declared exclusive by another connection), in
// the order given, checked on sess's connection after every request sent on
// it before: one round trip when none is missing, one more per slot when one
// is.
func (s *Semaphore) checkSlots(sess *session, slots []int) ([]int, error) {
	if len(slots) == 0 {
		return nil, nil
	}
	c, err := sess.channel()
	if err != nil {
		return nil, err
	}
	err = s.passiveChecks(c, slots)
	sess.release(c)
	if err == nil || !isCode(err, amqp.NotFound) && !isCode(err, amqp.ResourceLocked) {
		return nil, err
	}
	// One at a time, to tell which.
	var missing []int
	for _, sl := range slots {
		c, err := sess.channel()
		if err != nil {
			return nil, err
		}
		err = s.passiveChecks(c, []int{sl})
		sess.release(c)
		switch {
		case err == nil:
		case isCode(err, amqp.NotFound), isCode(err, amqp.ResourceLocked):
			missing = append(missing, sl)
		default:
			return nil, err
		}
	}
	return missing, nil
}

// dropHold deletes slot's B queue if sess's connection holds it: the broker
// refuses (RESOURCE_LOCKED) to delete another connection's.
func (s *Semaphore) dropHold(sess *session, slot int) error {
	c, err := sess.channel()
	if err != nil {
		return err
	}
	_, err = c.QueueDelete(holdQueue(s.name, slot), false, false, false)
	err = c.cause(err)
	sess.release(c)
	if isCode(err, amqp.ResourceLocked) {
		return nil
	}
	return err
}

// giveBack deletes the B queues of slots on sess, each deletion but the last
// sent without waiting for its answer (one round trip), then frees their
// reservations and wakes this handle's waiters. If the session is gone the
// broker dropped the queues with it. If a deletion fails while the connection
// lives, it closes the connection, which makes the broker drop every B queue
// of it, rather than leave a slot held by nobody; its other holders are told
// (Lost).
func (s *Semaphore) giveBack(sess *session, slots []int) error {
	if len(slots) == 0 {
		return nil
	}
	var err error
	if sess.err() == nil {
		err = s.deleteHolds(sess, slots)
		if err != nil && sess.err() == nil {
			sess.fail(fmt.Errorf("could not delete a holder queue (%v); closed the connection so that the broker drops it: %w", err, ErrLost))
		}
	}
	if cause := sess.err(); cause != nil {
		err = cause
	}
	if s.afterDelete != nil {
		s.afterDelete(slots)
	}
	s.unreserve(sess, slots)
	s.wake.notify()
	return err
}

func (s *Semaphore) deleteHolds(sess *session, slots []int) error {
	c, err := sess.channel()
	if err != nil {
		return err
	}
	defer sess.release(c)
	for i, sl := range slots {
		last := i == len(slots)-1
		if _, err := c.QueueDelete(holdQueue(s.name, sl), false, false, !last); err != nil {
			return fmt.Errorf("delete %s: %w", strconv.Quote(holdQueue(s.name, sl)), c.cause(err))
		}
	}
	return nil
}

// onSession runs fn, a request on the holding connection, and returns its
// error, or ctx's error if ctx ends first. The request then goes on: it ends
// when the broker answers or the connection is declared lost and closed.
func (s *Semaphore) onSession(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	if !s.spawn(func() { done <- fn() }) {
		return ErrClosed
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
