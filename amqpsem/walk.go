package amqpsem

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The protocol's acquire, for n slots, in walk: probe the A and B queues of
// slots 1, 2, ... until the first missing A queue (the capacity); declare the
// exclusive B queue of each free slot in ascending order until n are held;
// verify them (each A queue still exists, checked on the holding connection
// after the declares); give them all back if fewer than n are free.
//
// Departures from the published steps, none visible to other clients:
//   - The A and B queues of many slots are probed in one batch (one round
//     trip), not one queue per round trip; the declares still go in
//     ascending order, each after the probes that showed its slot free.
//   - The last declare and the verification go out together on one channel
//     (declareAndCheck): one round trip, the broker handling them in order.
//   - On RESOURCE_LOCKED (another client declared the B queue between our
//     probe and our declare: the broker closed our channel), the walk opens a
//     new channel, pauses for a random skew and goes on with the next free
//     slot, as the protocol allows, rather than from slot 1; after
//     cfg.attempts such failures it gives back what it took and fails with
//     ErrContended. When the free slots it saw run out, it probes again from
//     slot 1.
//   - A handle never declares a B queue it already holds, declares or gives
//     back (s.reserved): its connection owns those queues, and the broker
//     would answer a second declare of one with declare-ok, granting it twice.
//
// A B queue declared, then found with its A queue gone (an administrator
// removed the slot meanwhile), is deleted and the walk goes on.

// walkResult is what one walk found.
type walkResult struct {
	slots    []int // held: B queues declared on sess and verified; nil unless ok
	ok       bool
	capacity int // the slots the walk found (the first missing A queue, less one)
	err      error
}

// walk runs the protocol's acquire of n slots on sess. When ctx ends it gives
// back what it took and returns ctx's error; it never returns with a B queue
// declared and not in its result.
func (s *Semaphore) walk(ctx context.Context, sess *session, n int) walkResult {
	var got []int // declared on sess, in the order declared; verified only at the end
	failed := 0   // RESOURCE_LOCKED answers
	giveUp := func(r walkResult) walkResult {
		s.giveBack(sess, got)
		r.slots, r.ok = nil, false
		return r
	}
	held := func(capacity int) walkResult {
		if err := ctx.Err(); err != nil {
			return giveUp(walkResult{err: err})
		}
		return walkResult{slots: got, ok: true, capacity: capacity}
	}
	for {
		if err := ctx.Err(); err != nil {
			return giveUp(walkResult{err: err})
		}
		capacity, free, err := s.scan(ctx, sess)
		if err != nil {
			return giveUp(walkResult{err: err})
		}
		if capacity < n || len(got)+len(free) < n {
			return giveUp(walkResult{capacity: capacity})
		}
		for _, slot := range free {
			if len(got) == n {
				break
			}
			s.mu.Lock()
			ok := s.reserveLocked(slot, sess)
			s.mu.Unlock()
			if !ok {
				continue
			}
			if s.beforeDeclare != nil {
				s.beforeDeclare(slot)
			}
			last := len(got) == n-1
			if last {
				err = s.declareAndCheck(sess, slot, append(slices.Clone(got), slot))
			} else {
				err = s.declareHold(sess, slot)
			}
			switch {
			case err == nil && last:
				got = append(got, slot)
				return held(capacity)
			case err == nil:
				got = append(got, slot)
			case isCode(err, amqp.ResourceLocked):
				if last {
					// The answer may have been a check's: make sure the B
					// queue is not this connection's before counting it another's.
					if err := s.dropHold(sess, slot); err != nil {
						s.giveBack(sess, []int{slot})
						return giveUp(walkResult{err: err})
					}
				}
				s.unreserve(sess, []int{slot})
				s.mu.Lock()
				s.lockedRetries++
				s.mu.Unlock()
				if failed++; failed >= s.cfg.attempts {
					s.mu.Lock()
					s.contended++
					s.mu.Unlock()
					return giveUp(walkResult{capacity: capacity, err: ErrContended})
				}
				if err := s.skew(ctx); err != nil {
					return giveUp(walkResult{err: err})
				}
			case errors.Is(err, errGone):
				// Declared, and some of the slots taken were removed meanwhile.
				got = append(got, slot)
				removed, err := s.checkSlots(sess, got)
				if err != nil {
					return giveUp(walkResult{err: err})
				}
				s.giveBack(sess, removed)
				got = slices.DeleteFunc(got, func(sl int) bool { return slices.Contains(removed, sl) })
				if len(got) == n {
					return held(capacity) // checked one by one just now
				}
			default:
				s.giveBack(sess, []int{slot})
				return giveUp(walkResult{err: err})
			}
		}
		// The free slots seen ran out: probe again from slot 1.
	}
}

// scan probes the A and B queues of slot 1 onwards, one batch sized by the
// capacity seen last, more while every A queue probed exists, and returns the
// capacity and the free slots in ascending order: those whose B queue does not
// exist and that this handle does not hold or declare.
func (s *Semaphore) scan(ctx context.Context, sess *session) (capacity int, free []int, err error) {
	s.mu.Lock()
	batch := min(max(s.capacity+1, 2), maxBatch/2)
	s.mu.Unlock()
	from := 1
	for {
		to := min(from+batch-1, MaxSlots+1)
		queues := make([]string, 0, 2*(to-from+1))
		for sl := from; sl <= to; sl++ {
			queues = append(queues, slotQueue(s.name, sl), holdQueue(s.name, sl))
		}
		exists, err := s.probe.exists(ctx, queues)
		if err != nil {
			return 0, nil, err
		}
		s.mu.Lock()
		for i := 0; i < len(exists); i += 2 {
			sl := from + i/2
			if !exists[i] || sl > MaxSlots {
				s.capacity = sl - 1
				s.mu.Unlock()
				return sl - 1, free, nil
			}
			if owner, mine := s.reserved[sl]; !exists[i+1] && (!mine || owner != sess) {
				free = append(free, sl)
			}
		}
		s.mu.Unlock()
		from, batch = to+1, min(2*batch, maxBatch/2)
	}
}

// skew pauses for a random time up to cfg.skew, or until ctx ends.
func (s *Semaphore) skew(ctx context.Context) error {
	if s.cfg.skew <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(rand.N(s.cfg.skew))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func holdQueues(name string, slots []int) []string {
	qs := make([]string, len(slots))
	for i, sl := range slots {
		qs[i] = holdQueue(name, sl)
	}
	return qs
}
