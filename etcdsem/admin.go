package etcdsem

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/internal/errs"
	"github.com/fairsem/semaphore/internal/statsline"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Resize sets the capacity to c for every handle. Holders are never revoked:
// after a shrink they keep their units and nobody is granted until the units
// held fit under c. Waiters asking for more than c fail with
// semaphore.ErrTooLarge, at the revision of the change. Resize works while
// broken. It panics if c is negative or above semaphore.MaxUnits.
func (s *Semaphore) Resize(ctx context.Context, c int64) error {
	s.checkUnits("Resize", c)
	op := "resize to " + strconv.FormatInt(c, 10)
	if err := s.errIfClosed(opCall(op)); err != nil {
		return err
	}
	cctx, stop := s.sess.callContext(ctx)
	defer stop()
	if _, err := s.sess.cli.Put(cctx, s.capKey, formatUnits(c)); err != nil {
		return s.failed(opCall(op), err)
	}
	return nil
}

// Break breaks the semaphore for every handle: every waiter fails with an error
// wrapping semaphore.ErrBroken and the reason (err's text, which is what
// crosses processes), and so does every later acquire, until Repair. Holders
// keep their units and may release them. The broken state is kept in etcd, so
// it survives restarts of clients and servers. Breaking a broken semaphore
// replaces the reason. It panics if err is nil.
func (s *Semaphore) Break(ctx context.Context, err error) error {
	if err == nil {
		panic(fmt.Sprintf("etcdsem %q: Break(nil): a reason is required", s.name))
	}
	if cerr := s.errIfClosed(opCall("break")); cerr != nil {
		return cerr
	}
	cctx, stop := s.sess.callContext(ctx)
	defer stop()
	if _, perr := s.sess.cli.Put(cctx, s.brokenKey, err.Error()); perr != nil {
		return s.failed(opCall("break"), perr)
	}
	return nil
}

// Repair undoes Break: later acquires proceed. Waiters failed by the break stay
// failed. Repairing a semaphore that is not broken does nothing.
func (s *Semaphore) Repair(ctx context.Context) error {
	if err := s.errIfClosed(opCall("repair")); err != nil {
		return err
	}
	cctx, stop := s.sess.callContext(ctx)
	defer stop()
	if _, err := s.sess.cli.Delete(cctx, s.brokenKey); err != nil {
		return s.failed(opCall("repair"), err)
	}
	return nil
}

// Drain waits until no units of the semaphore are held by any handle, and
// returns nil then, at once if none are. It does not stop admission: on a
// healthy semaphore new grants may keep it waiting. The shutdown sequence is
// Break, then Drain: from then on units only come back. Keys whose state this
// handle could not learn (see Stats) count as held. If ctx ends first it
// returns an error that matches ctx.Err() and context.Cause(ctx) (and
// semaphore.ErrTimedOut for a deadline) and says how many units are still
// held; nobody's units are touched.
func (s *Semaphore) Drain(ctx context.Context) error {
	start := time.Now()
	if err := s.errIfClosed(opCall("drain")); err != nil {
		return err
	}
	cctx, stop := s.sess.callContext(ctx)
	defer stop()
	if err := s.catchUp(cctx); err != nil {
		if ctx.Err() != nil {
			return s.drainError(ctx, start)
		}
		return s.failed(opCall("drain"), err)
	}
	for {
		s.mu.Lock()
		held, ch, closed := s.q.held(), s.q.advanced, s.sess.closed.Load()
		s.mu.Unlock()
		switch {
		case closed:
			return s.closedError(opCall("drain"))
		case held == 0:
			return nil
		}
		select {
		case <-ch:
		case <-cctx.Done():
			if ctx.Err() != nil {
				return s.drainError(ctx, start)
			}
			// Closed: the loop says so.
		}
	}
}

// drainError is the error of a Drain whose ctx ended.
func (s *Semaphore) drainError(ctx context.Context, start time.Time) error {
	s.mu.Lock()
	held := s.q.held()
	s.mu.Unlock()
	deadline, why, matches := errs.Context(ctx)
	still := errs.Count(held, "unit") + " still held: "
	after := " after " + time.Since(start).Round(time.Millisecond).String() + ": " + why
	if deadline {
		return s.fail(opCall("drain"), nil, still+"timed out"+after, append(matches, semaphore.ErrTimedOut)...)
	}
	return s.fail(opCall("drain"), nil, still+"canceled"+after, matches...)
}

// Stats is a snapshot of a semaphore, from one handle's view at one revision.
type Stats struct {
	Name     string   // the semaphore's name, as Name
	Revision int64    // the etcd revision the snapshot describes
	Capacity int64    // the capacity (0 if never set)
	Held     int64    // units held by Holders; more than Capacity after a shrink
	Broken   bool     // broken, with BrokenReason
	Reason   string   // the reason given to Break
	Holders  []Entry  // granted keys, oldest first
	Waiters  []Entry  // waiting keys, in queue order
	Reports  []Report // each block-mode handle's callers as last reported, in lease order
}

// String writes s on one line, its entries counted, for example
//
//	etcdsem "jobs" revision=1042 capacity=10 held=3 broken=false holders=2 waiters=1 reports=0
//
// with reason after broken=true when it is broken. semctl status lists the
// entries; %#v prints them whole. Names and the reason are quoted.
func (s Stats) String() string {
	l := statsline.New("etcdsem", s.Name)
	l.Int("revision", s.Revision)
	l.Int("capacity", s.Capacity)
	l.Int("held", s.Held)
	l.Bool("broken", s.Broken)
	if s.Broken {
		l.Quote("reason", s.Reason)
	}
	l.Int("holders", int64(len(s.Holders)))
	l.Int("waiters", int64(len(s.Waiters)))
	l.Int("reports", int64(len(s.Reports)))
	return l.String()
}

// An Entry is one acquire in Stats.
type Entry struct {
	Key    string
	Units  int64
	Token  int64         // the key's create revision
	Lease  int64         // the holder's lease
	Age    time.Duration // since the acquire started, by the writer's clock
	Client string        // the writer's WithClientName
}

// Stats reads the semaphore as of now: it reads the block-mode handles'
// reports (one read), waits until this handle's view has caught up with etcd
// at that read, then reports it. A handle learns the state of keys older than
// itself by replaying their history when it starts; if that history was
// compacted, keys that did not fit then are reported as waiters, though some
// may be holders kept by a shrinking Resize. A report follows its handle's
// callers within about 3s while etcd answers (see the package doc).
func (s *Semaphore) Stats(ctx context.Context) (Stats, error) {
	if err := s.errIfClosed(opCall("stats")); err != nil {
		return Stats{}, err
	}
	cctx, stop := s.sess.callContext(ctx)
	defer stop()
	reports, rev, err := s.readReports(cctx)
	if err == nil {
		err = s.waitRevision(cctx, rev)
	}
	if err != nil {
		return Stats{}, s.failed(opCall("stats"), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Name: s.name, Revision: s.q.rev, Capacity: s.q.capacity, Broken: s.q.broken, Reason: s.q.reason, Reports: reports}
	now := time.Now()
	for _, k := range s.q.keys {
		e := Entry{Key: k.key, Units: k.n, Token: k.createRev, Lease: k.lease, Client: k.client}
		if !k.created.IsZero() {
			e.Age = now.Sub(k.created)
		}
		switch k.state {
		case keyGranted:
			st.Holders = append(st.Holders, e)
			st.Held += k.n
		case keyWaiting, keyUnknown:
			st.Waiters = append(st.Waiters, e)
		}
	}
	return st, nil
}

// LeaseTTL returns the remaining TTL of a lease in Stats, for operators.
func LeaseTTL(ctx context.Context, cli *clientv3.Client, lease int64) (time.Duration, error) {
	resp, err := cli.TimeToLive(ctx, clientv3.LeaseID(lease))
	if err != nil {
		return 0, err
	}
	return time.Duration(resp.TTL) * time.Second, nil
}
