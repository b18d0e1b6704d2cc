package amqpsem

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	amqp "github.com/rabbitmq/amqp091-go"
)

// Administration follows the protocol: every change is made holding the
// semaphore's administration mutex, the exclusive queue named NAME, so that
// two administrators never leave a gap in the A queues (a gap would hide every
// slot above it). Slots are added in ascending order and removed in
// descending order, each deletion confirmed (delete-ok) before the next, so
// the A queues stay contiguous from slot 1 at every moment. Each change
// overshoots: it first deletes the A queues of the cfg.overshoot slots above
// the maximum it found, left by an administrator that failed midway or by
// hand, which would otherwise join the semaphore when a slot below them is
// added. Removing a slot never touches its holder: the holder keeps its B
// queue until it gives it back; WaitReleased waits for that.

// admin runs fn holding the administration mutex, with the current number of
// slots, on the holding connection: if that connection is lost, the mutex is
// gone with it and fn's next request fails.
func (s *Semaphore) admin(ctx context.Context, op string, fn func(sess *session, slots int) error) error {
	c := opCall(op)
	if s.isClosed() {
		return s.closedError(c)
	}
	sess, err := s.currentSession(ctx)
	if err != nil {
		return s.adminError(ctx, c, err)
	}
	if err := s.lockAdmin(ctx, sess); err != nil {
		return s.adminError(ctx, c, err)
	}
	defer s.unlockAdmin(sess)
	slots, err := s.count(ctx)
	if err == nil {
		err = fn(sess, slots)
	}
	if err != nil {
		return s.adminError(ctx, c, err)
	}
	return nil
}

func (s *Semaphore) adminError(ctx context.Context, c call, err error) error {
	if ctx.Err() != nil {
		deadline, why, matches := errs.Context(ctx)
		if deadline {
			matches = append(matches, semaphore.ErrTimedOut)
		}
		if msg := err.Error(); msg != ctx.Err().Error() {
			why = msg // says what it waited for, and ends with ctx's error
		}
		return s.fail(c, nil, why, matches...)
	}
	return s.brokerError(c, err)
}

// lockAdmin declares the mutex queue, exclusive, on sess; while another
// client holds it (RESOURCE_LOCKED) it tries again after a backoff until ctx
// ends.
func (s *Semaphore) lockAdmin(ctx context.Context, sess *session) error {
	backoff := s.cfg.pollMin
	for {
		ch, err := sess.channel()
		if err != nil {
			return err
		}
		_, err = ch.QueueDeclare(mutexQueue(s.name), false, false, true, false, nil)
		sess.release(ch)
		if err == nil || !isCode(err, amqp.ResourceLocked) {
			return err
		}
		t := time.NewTimer(jitter(backoff))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("the administration mutex queue %s is held by another client: %w", strconv.Quote(mutexQueue(s.name)), ctx.Err())
		}
		backoff = min(2*backoff, s.cfg.pollMax)
	}
}

func (s *Semaphore) unlockAdmin(sess *session) {
	if ch, err := sess.channel(); err == nil {
		_, _ = ch.QueueDelete(mutexQueue(s.name), false, false, false)
		sess.release(ch)
	}
}

// count returns the number of slots: the A queues from slot 1 up to the first
// missing one, probed in batches that grow.
func (s *Semaphore) count(ctx context.Context) (int, error) {
	from, batch := 1, 16
	for {
		to := min(from+batch-1, MaxSlots+1)
		qs := make([]string, 0, to-from+1)
		for sl := from; sl <= to; sl++ {
			qs = append(qs, slotQueue(s.name, sl))
		}
		exists, err := s.probe.exists(ctx, qs)
		if err != nil {
			return 0, err
		}
		for i, ok := range exists {
			if !ok || from+i > MaxSlots {
				n := from + i - 1
				s.mu.Lock()
				s.capacity = n
				s.mu.Unlock()
				return n, nil
			}
		}
		from, batch = to+1, min(2*batch, maxBatch)
	}
}

// declareSlots declares the A queues of slots from..to, ascending.
func (s *Semaphore) declareSlots(sess *session, from, to int) error {
	for sl := from; sl <= to; sl++ {
		ch, err := sess.channel()
		if err != nil {
			return err
		}
		_, err = ch.QueueDeclare(slotQueue(s.name, sl), true, false, false, false, nil)
		sess.release(ch)
		if err != nil {
			return fmt.Errorf("declare %s: %w", strconv.Quote(slotQueue(s.name, sl)), err)
		}
	}
	return nil
}

// deleteSlots deletes the A queues of slots from..to, descending, each
// confirmed before the next. Deleting a queue that does not exist succeeds.
func (s *Semaphore) deleteSlots(sess *session, from, to int) error {
	for sl := to; sl >= from; sl-- {
		ch, err := sess.channel()
		if err != nil {
			return err
		}
		_, err = ch.QueueDelete(slotQueue(s.name, sl), false, false, false)
		sess.release(ch)
		if err != nil {
			return fmt.Errorf("delete %s: %w", strconv.Quote(slotQueue(s.name, sl)), err)
		}
	}
	return nil
}

// overshoot deletes the A queues of the cfg.overshoot slots above max.
func (s *Semaphore) overshoot(sess *session, max int) error {
	if s.cfg.overshoot == 0 || max >= MaxSlots {
		return nil
	}
	return s.deleteSlots(sess, max+1, min(max+s.cfg.overshoot, MaxSlots))
}

// create gives a semaphore without slots n slots (New's WithSlots).
func (s *Semaphore) create(ctx context.Context, n int) error {
	return s.admin(ctx, "create with "+errs.Count(int64(n), "slot"), func(sess *session, slots int) error {
		if slots > 0 {
			return nil // exists: left as it is
		}
		if err := s.overshoot(sess, 0); err != nil {
			return err
		}
		return s.declareSlots(sess, 1, n)
	})
}

// Slots returns the semaphore's number of slots: its A queues from slot 1 up
// to the first missing one.
func (s *Semaphore) Slots(ctx context.Context) (int, error) {
	if s.isClosed() {
		return 0, s.closedError(opCall("slots"))
	}
	n, err := s.count(ctx)
	if err != nil {
		return 0, s.adminError(ctx, opCall("slots"), err)
	}
	return n, nil
}

// AddSlots adds x slots above the current maximum and returns the new number
// of slots. Waiters of every handle may be granted them at once. It panics if
// x is negative, and fails with semaphore.ErrTooLarge past MaxSlots.
func (s *Semaphore) AddSlots(ctx context.Context, x int) (int, error) {
	checkSlots("AddSlots", x)
	var now int
	err := s.admin(ctx, "add "+errs.Count(int64(x), "slot"), func(sess *session, slots int) error {
		if slots+x > MaxSlots {
			return fmt.Errorf("%d slots would exceed MaxSlots (%d): %w", slots+x, MaxSlots, semaphore.ErrTooLarge)
		}
		if err := s.overshoot(sess, slots); err != nil {
			return err
		}
		now = slots + x
		return s.declareSlots(sess, slots+1, slots+x)
	})
	return now, err
}

// RemoveSlots removes the x highest slots (all if fewer) and returns them,
// highest first. Their holders are not revoked: each keeps its B queue until
// it gives it back (Units.Verify tells it its slot was removed); WaitReleased
// waits for that. Waiters asking for more slots than remain fail with
// semaphore.ErrTooLarge when they next look. It panics if x is negative.
func (s *Semaphore) RemoveSlots(ctx context.Context, x int) ([]int, error) {
	checkSlots("RemoveSlots", x)
	var removed []int
	err := s.admin(ctx, "remove "+errs.Count(int64(x), "slot"), func(sess *session, slots int) error {
		removed = s.removeFrom(slots, max(0, slots-x))
		if err := s.overshoot(sess, slots); err != nil {
			return err
		}
		return s.deleteSlots(sess, max(0, slots-x)+1, slots)
	})
	return removed, err
}

// Resize adds or removes slots until there are n, and returns the slots it
// removed, highest first (none when it adds): RemoveSlots' rules apply to
// them. It panics if n is negative or above MaxSlots.
func (s *Semaphore) Resize(ctx context.Context, n int) ([]int, error) {
	checkSlots("Resize", n)
	var removed []int
	err := s.admin(ctx, "resize to "+strconv.Itoa(n), func(sess *session, slots int) error {
		if err := s.overshoot(sess, slots); err != nil {
			return err
		}
		if n >= slots {
			return s.declareSlots(sess, slots+1, n)
		}
		removed = s.removeFrom(slots, n)
		return s.deleteSlots(sess, n+1, slots)
	})
	return removed, err
}

// Destroy removes every slot, highest first, and returns them; holders keep
// their B queues until they give them back (WaitReleased). Every acquire of
// any client fails from then on, as on a semaphore that never existed.
func (s *Semaphore) Destroy(ctx context.Context) ([]int, error) {
	var removed []int
	err := s.admin(ctx, "destroy", func(sess *session, slots int) error {
		removed = s.removeFrom(slots, 0)
		if err := s.overshoot(sess, slots); err != nil {
			return err
		}
		return s.deleteSlots(sess, 1, slots)
	})
	return removed, err
}

// removeFrom lists the slots above keep up to slots, highest first.
func (s *Semaphore) removeFrom(slots, keep int) []int {
	var out []int
	for sl := slots; sl > keep; sl-- {
		out = append(out, sl)
	}
	return out
}

// WaitReleased waits until no client holds any of slots (their B queues are
// gone), as the protocol's administrator waits for the holders of removed
// slots, and returns nil then. It is woken by the broker's events, or polls
// with a backoff without them. Meaningful for removed slots only: a slot
// still in the semaphore can be taken again between two looks. If ctx ends
// first it returns an error matching ctx.Err() (and semaphore.ErrTimedOut for
// a deadline) naming the slots still held.
func (s *Semaphore) WaitReleased(ctx context.Context, slots []int) error {
	slots = slices.Clone(slots)
	c := opCall("wait for the holders of slots " + slotList(slots))
	backoff := s.cfg.pollMin
	start := time.Now()
	for {
		if s.isClosed() {
			return s.closedError(c)
		}
		sub := s.wake.subscribe(ctx)
		gen := s.wake.current()
		if ctx.Err() != nil {
			break
		}
		exists, err := s.probe.exists(ctx, holdQueues(s.name, slots))
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return s.brokerError(c, err)
		}
		still := slots[:0]
		for i, ok := range exists {
			if ok {
				still = append(still, slots[i])
			}
		}
		slots = still
		if len(slots) == 0 {
			return nil
		}
		wait := eventsSafetyPoll
		if !sub {
			wait = jitter(backoff)
			backoff = min(2*backoff, s.cfg.pollMax)
		}
		t := time.NewTimer(wait)
		select {
		case <-gen:
		case <-t.C:
		case <-ctx.Done():
		case <-s.bg.Done():
		}
		t.Stop()
	}
	deadline, why, matches := errs.Context(ctx)
	if deadline {
		matches = append(matches, semaphore.ErrTimedOut)
	}
	return s.fail(c, nil, fmt.Sprintf("slots %s still held after %v: %s", slotList(slots), time.Since(start).Round(time.Millisecond), why), matches...)
}
