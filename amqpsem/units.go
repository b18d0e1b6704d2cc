package amqpsem

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fairsem/semaphore"
)

// Units are slots held by one acquire: the B queues of those slots, declared
// exclusive on the handle's holding connection. They are held until Release,
// Return of all of them, Close of the handle, or their loss, which Lost
// reports.
type Units struct {
	s     *Semaphore
	sess  *session      // fixed: the connection holding the queues; nil for zero slots
	lostC chan struct{} // closed when the units are lost

	// guarded by s.mu
	slots     []int // held, ascending
	state     unitsState
	err       error         // why lost
	releasing chan struct{} // closed when a Release in flight ends; nil when none is
}

type unitsState uint8

const (
	unitsHeld     unitsState = iota
	unitsReleased            // by Release or Return of all
	unitsLost                // Lost closed
	unitsClosed              // given back by the handle's Close
)

func (s *Semaphore) newUnits(sess *session, slots []int) *Units {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newUnitsLocked(sess, slots)
}

func (s *Semaphore) newUnitsLocked(sess *session, slots []int) *Units {
	slots = slices.Clone(slots)
	slices.Sort(slots)
	u := &Units{s: s, sess: sess, lostC: make(chan struct{}), slots: slots}
	if len(slots) > 0 {
		s.held[u] = struct{}{}
	} else {
		u.state = unitsReleased
	}
	return u
}

// markLostLocked records the loss. s.mu must be held.
func (u *Units) markLostLocked(cause error) {
	if u.state != unitsHeld {
		return
	}
	u.state, u.err = unitsLost, cause
	close(u.lostC)
}

// Slots returns the slot numbers held, ascending (the protocol's L of each
// B queue); none after Release, loss or Close.
func (u *Units) Slots() []int {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if u.state != unitsHeld {
		return nil
	}
	return slices.Clone(u.slots)
}

// Count returns the slots held: those acquired, less those returned; 0 after
// Release, loss or the handle's Close.
func (u *Units) Count() int64 {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if u.state != unitsHeld {
		return 0
	}
	return int64(len(u.slots))
}

// Lost returns a channel that is closed when the units are lost: the holding
// connection was not known to be alive within the heartbeat timeout less the
// margin (it closes before the broker can drop the B queues, so before anyone
// else can take the slots), or the connection closed (the broker dropped the
// queues as it closed it). It is never closed by Release or by Close.
func (u *Units) Lost() <-chan struct{} { return u.lostC }

// Err returns why the units were lost (an error wrapping ErrLost), or nil.
func (u *Units) Err() error {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	if u.state != unitsLost {
		return nil
	}
	return u.s.fail(opCall("units of slots "+slotList(u.slots)), nil, u.err.Error(), u.err)
}

// Release gives the slots back: it deletes their B queues on the holding
// connection and returns once the broker confirmed each deletion. It is
// idempotent, nil-safe and safe to retry. It returns nil once the slots are
// given back, an error wrapping ErrLost if they were lost before (so the
// caller learns its critical section may not have been exclusive), and nil
// after the handle's Close (Close gave them back). If ctx ends first it
// returns ctx's error and the deletions go on: the slots are given back when
// they end, and a later Release waits for them.
func (u *Units) Release(ctx context.Context) error {
	if u == nil {
		return nil
	}
	return u.giveBack(ctx, "release", -1)
}

// Return gives back m of the slots, the highest first, and keeps the rest.
// Returning all of them is Release. It returns an error wrapping
// semaphore.ErrInsufficientUnits if m exceeds Count, ErrLost if the units
// were lost, and what Release returns otherwise. It panics if m is negative.
func (u *Units) Return(ctx context.Context, m int64) error {
	if m < 0 {
		panic(fmt.Sprintf("amqpsem %q: Units.Return(%d): negative", u.s.name, m))
	}
	return u.giveBack(ctx, "return", m)
}

// giveBack deletes the B queues of m of the slots (all when m < 0).
func (u *Units) giveBack(ctx context.Context, op string, m int64) error {
	s := u.s
	for {
		s.mu.Lock()
		c := call{op: op + " slots " + slotList(u.slots)}
		if m >= 0 {
			c = call{op: op, n: m, units: true}
		}
		switch {
		case u.state == unitsLost:
			err := s.fail(c, nil, u.err.Error(), u.err)
			s.mu.Unlock()
			return err
		case u.state == unitsClosed || s.closed:
			s.mu.Unlock()
			return nil // Close gave the slots back
		case u.state != unitsHeld:
			s.mu.Unlock()
			if m > 0 {
				return s.fail(c, nil, "0 held: "+semaphore.ErrInsufficientUnits.Error(), semaphore.ErrInsufficientUnits)
			}
			return nil
		case m > int64(len(u.slots)):
			err := s.fail(c, nil, fmt.Sprintf("%d held: %v", len(u.slots), semaphore.ErrInsufficientUnits), semaphore.ErrInsufficientUnits)
			s.mu.Unlock()
			return err
		case m == 0:
			s.mu.Unlock()
			return nil
		case u.releasing != nil:
			// Another give-back is in flight: wait for it, then look again.
			ch := u.releasing
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		k := len(u.slots)
		if m >= 0 {
			k = int(m)
		}
		slots := slices.Clone(u.slots[len(u.slots)-k:])
		done := make(chan struct{})
		u.releasing = done
		s.wg.Add(1) // under mu, s.closed false: before Close's Wait
		s.mu.Unlock()

		result := make(chan error, 1)
		go func() {
			defer s.wg.Done()
			err := s.giveBack(u.sess, slots)
			s.mu.Lock()
			u.releasing = nil
			close(done)
			if err == nil && u.state == unitsHeld {
				u.slots = u.slots[:len(u.slots)-k]
				if len(u.slots) == 0 {
					u.state = unitsReleased
					delete(s.held, u)
				}
			}
			s.mu.Unlock()
			s.wake.notify()
			result <- err
		}()
		select {
		case err := <-result:
			s.mu.Lock()
			defer s.mu.Unlock()
			switch {
			case u.state == unitsLost:
				return s.fail(c, nil, u.err.Error(), u.err)
			case u.state == unitsClosed:
				return nil
			case err != nil:
				return s.brokerError(c, err)
			}
			return nil
		case <-ctx.Done():
			return s.fail(c, nil, "canceled before the broker confirmed: the deletion goes on: "+ctx.Err().Error(), ctx.Err())
		}
	}
}

// Verify checks the held slots as the protocol describes: on the connection
// that holds them, each slot's A queue still exists. It returns nil if so, an
// error wrapping ErrLost if the units were lost or the holding connection
// does not answer, and one wrapping ErrSlotRemoved naming the slots whose A
// queue is gone (an administrator removed them: the holder keeps its B
// queues, but should give the slots back). It works during a resource alarm:
// the holding connection never publishes, so the broker does not block it.
// Units released or given back by Close verify as nil with no slots. If ctx
// ends first it returns ctx's error.
func (u *Units) Verify(ctx context.Context) error {
	s := u.s
	s.mu.Lock()
	state, slots, cause := u.state, slices.Clone(u.slots), u.err
	s.mu.Unlock()
	c := opCall("verify slots " + slotList(slots))
	switch state {
	case unitsLost:
		return s.fail(c, nil, cause.Error(), cause)
	case unitsHeld:
	default:
		return nil
	}
	var removed []int
	err := s.onSession(ctx, func() error {
		var err error
		removed, err = s.checkSlots(u.sess, slots)
		return err
	})
	switch {
	case err == nil && len(removed) > 0:
		return s.fail(c, nil, "slots "+slotList(removed)+" removed: "+ErrSlotRemoved.Error(), ErrSlotRemoved)
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed):
		return nil // Close gave the slots back
	case ctx.Err() != nil:
		return s.fail(c, nil, "canceled before the broker answered: "+ctx.Err().Error(), ctx.Err())
	}
	if cause := u.sess.err(); cause != nil {
		return s.fail(c, nil, cause.Error(), cause)
	}
	return s.brokerError(c, err)
}
