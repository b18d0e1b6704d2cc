package amqpsem

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	amqp "github.com/rabbitmq/amqp091-go"
)

// A Semaphore is a handle on a persistent semaphore kept in RabbitMQ under a
// name, as the published protocol lays it out: slot i is the durable queue
// NAME-i-A, its holder the exclusive queue NAME-i-B, so any client of the
// protocol, in this library or not, shares it. TryAcquire is the protocol's
// acquire; Acquire waits for slots; Units give them back. AddSlots,
// RemoveSlots, Resize and Destroy administer the semaphore under its
// administration mutex.
//
// A handle has two connections to the broker: one that holds its B queues
// (its holders' slots, lost together if it is), dialled on the first acquire
// and again after a loss, and one that probes queues and receives events. It
// is safe for concurrent use. Close it when done: that gives back every slot
// it holds.
type Semaphore struct {
	// fixed after New
	name   string
	url    string
	cfg    config
	probe  *prober
	turn   *semaphore.Semaphore // one caller of this handle at a time walks the slots, in FIFO order
	wake   *waker
	bg     context.Context // done when the handle closes
	stopBg context.CancelFunc
	wg     sync.WaitGroup // walks, give-backs and holding-connection requests in flight (spawn)

	beforeDeclare func(slot int)    // tests: runs before each B queue declare
	afterDelete   func(slots []int) // tests: runs when a give-back's deletions are confirmed, before their slots are free for this handle again

	mu       sync.Mutex
	closed   bool                // guarded by mu; terminal
	sess     *session            // guarded by mu: nil before the first acquire and after a loss
	opening  chan struct{}       // guarded by mu: closed when the dial in flight ends; nil when none is
	reserved map[int]*session    // guarded by mu: slots this handle holds, declares or gives back, by session
	held     map[*Units]struct{} // guarded by mu: units held (not released, lost or closed)
	broken   bool                // guarded by mu; terminal
	reason   string              // guarded by mu: Break's cause
	brokenCh chan struct{}       // closed by Break
	capacity int                 // guarded by mu: the slots the last walk found; sizes the next probe
	waiting  int                 // guarded by mu: callers in Acquire
	counters                     // guarded by mu
}

// counters are a handle's counts since New, for Stats.
type counters struct {
	acquired, timedOut, cancelled, contended, lockedRetries, lost, walks int64
}

// New returns a handle on the semaphore name at the broker url
// ("amqp://user:pass@host:5672/vhost"). It checks the name (CheckName),
// connects its probing connection, and with WithSlots creates the semaphore
// if it has no slots, under the administration mutex. It does not dial the
// holding connection; the first acquire does. It fails with an error wrapping
// ErrBadName for a bad name, with the broker's error if it cannot connect,
// and, with WithWakeup(WakeEvents), if the broker has no event exchange.
func New(ctx context.Context, url, name string, opts ...Option) (*Semaphore, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	s := &Semaphore{
		name:     name,
		url:      url,
		cfg:      cfg,
		probe:    newProber(url, cfg.amqp),
		turn:     semaphore.New(1, semaphore.WithName("amqpsem "+name)),
		bg:       bg,
		stopBg:   stop,
		reserved: map[int]*session{},
		held:     map[*Units]struct{}{},
		brokenCh: make(chan struct{}),
	}
	s.wake = newWaker(s)
	if err := s.wake.resolve(ctx); err != nil {
		s.Close()
		return nil, s.brokerError(opCall("new"), err)
	}
	if cfg.hasSlots && cfg.slots > 0 {
		if err := s.create(ctx, cfg.slots); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// Close gives back every slot this handle holds (it closes the connection
// holding their B queues: the broker deletes them), ends every call of the
// handle in flight with ErrClosed and closes its connections. Closing is
// final: Release and Return of the handle's units return nil afterwards (the
// slots were given back, not lost), Close returns nil, and every other call
// fails with ErrClosed.
func (s *Semaphore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	sess := s.sess
	s.sess = nil
	for u := range s.held {
		u.state = unitsClosed
		delete(s.held, u)
	}
	s.mu.Unlock()
	s.stopBg()
	s.turn.Break(ErrClosed)
	if sess != nil {
		sess.close()
	}
	s.probe.close()
	s.wg.Wait()
	s.wake.stop()
	return nil
}

func (s *Semaphore) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// currentSession returns the holding session, dialling one if there is none.
// The dial runs outside mu: one caller dials while the others that need the
// session wait for it, each as long as its ctx lets it.
func (s *Semaphore) currentSession(ctx context.Context) (*session, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, ErrClosed
		case s.sess != nil:
			sess := s.sess
			s.mu.Unlock()
			return sess, nil
		case s.opening != nil:
			ch := s.opening
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		s.opening = done
		s.mu.Unlock()

		cfg := s.cfg.amqp
		cfg.Properties = amqp.Table{}
		for k, v := range s.cfg.amqp.Properties {
			cfg.Properties[k] = v
		}
		sess, err := openSession(ctx, s.url, cfg, s.cfg.margin, s.sessionLost)
		s.mu.Lock()
		s.opening = nil
		close(done)
		switch {
		case err != nil:
			s.mu.Unlock()
			return nil, err
		case s.closed:
			s.mu.Unlock()
			sess.close()
			return nil, ErrClosed
		case sess.err() != nil:
			s.mu.Unlock()
			continue // lost already: the dial took longer than the timeout less the margin
		}
		s.sess = sess
		s.mu.Unlock()
		return sess, nil
	}
}

// sessionLost runs once when sess is lost: every holder on it is told, and
// its reservations go (the broker dropped its B queues with the connection).
func (s *Semaphore) sessionLost(sess *session) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
	}
	cause := sess.err()
	for u := range s.held {
		if u.sess == sess {
			u.markLostLocked(cause)
			delete(s.held, u)
			s.lost++
		}
	}
	for slot, owner := range s.reserved {
		if owner == sess {
			delete(s.reserved, slot)
		}
	}
	s.mu.Unlock()
	s.wake.notify()
}

// Break breaks this handle: every caller of it waiting in Acquire fails with
// an error wrapping semaphore.ErrBroken and err, and so does every later
// Acquire and TryAcquire. Holders keep their slots and may release them;
// Drain then waits until they have. It breaks this handle only: other
// processes, and other implementations of the protocol, know nothing of it
// (the protocol has no such state; RemoveSlots is how every client is
// stopped). Breaking again keeps the first reason. It panics if err is nil.
func (s *Semaphore) Break(err error) {
	if err == nil {
		panic(fmt.Sprintf("amqpsem %q: Break(nil): a reason is required", s.name))
	}
	s.mu.Lock()
	if s.broken {
		s.mu.Unlock()
		return
	}
	s.broken, s.reason = true, err.Error()
	close(s.brokenCh)
	s.mu.Unlock()
	s.turn.Break(err)
}

// Drain waits until no caller of this handle holds slots, and returns nil
// then, at once if none does. It does not stop admission: the shutdown is
// Break, then Drain. If ctx ends first it returns an error that matches
// ctx.Err() (and semaphore.ErrTimedOut for a deadline) and says how many
// slots are still held; nobody's slots are touched.
func (s *Semaphore) Drain(ctx context.Context) error {
	start := time.Now()
	for {
		gen := s.wake.current()
		s.mu.Lock()
		n, closed := s.heldLocked(), s.closed
		s.mu.Unlock()
		switch {
		case closed:
			return s.closedError(opCall("drain"))
		case n == 0:
			return nil
		}
		select {
		case <-gen:
		case <-s.bg.Done():
		case <-ctx.Done():
			deadline, why, matches := errs.Context(ctx)
			still := fmt.Sprintf("%d slots still held: ", n)
			after := " after " + time.Since(start).Round(time.Millisecond).String() + ": " + why
			if deadline {
				return s.fail(opCall("drain"), nil, still+"timed out"+after, append(matches, semaphore.ErrTimedOut)...)
			}
			return s.fail(opCall("drain"), nil, still+"canceled"+after, matches...)
		}
	}
}

// spawn runs fn on a goroutine that Close waits for, and reports true; after
// Close it runs nothing and reports false. (Adding to wg under mu, with closed
// checked, orders every Add before Close's Wait.)
func (s *Semaphore) spawn(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// heldLocked counts the slots this handle's callers hold. s.mu must be held.
func (s *Semaphore) heldLocked() int {
	n := 0
	for u := range s.held {
		n += len(u.slots)
	}
	return n
}

// reserveLocked claims slot for sess unless this handle already holds,
// declares or gives it back on the current session.
func (s *Semaphore) reserveLocked(slot int, sess *session) bool {
	if owner, ok := s.reserved[slot]; ok && owner == sess {
		return false
	}
	s.reserved[slot] = sess
	return true
}

// unreserve frees slots claimed for sess (after their B queues were deleted).
func (s *Semaphore) unreserve(sess *session, slots []int) {
	s.mu.Lock()
	for _, sl := range slots {
		if s.reserved[sl] == sess {
			delete(s.reserved, sl)
		}
	}
	s.mu.Unlock()
}
