package etcdsem

import (
	"context"
	"fmt"
	"strconv"
	"time"

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
	if err := s.errIfClosed(op); err != nil {
		return err
	}
	if _, err := s.cli.Put(ctx, s.capKey, formatUnits(c)); err != nil {
		return s.errorf(op, "%w", err)
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
	if cerr := s.errIfClosed("break"); cerr != nil {
		return cerr
	}
	if _, perr := s.cli.Put(ctx, s.brokenKey, err.Error()); perr != nil {
		return s.errorf("break", "%w", perr)
	}
	return nil
}

// Repair undoes Break: later acquires proceed. Waiters failed by the break stay
// failed. Repairing a semaphore that is not broken does nothing.
func (s *Semaphore) Repair(ctx context.Context) error {
	if err := s.errIfClosed("repair"); err != nil {
		return err
	}
	if _, err := s.cli.Delete(ctx, s.brokenKey); err != nil {
		return s.errorf("repair", "%w", err)
	}
	return nil
}

// Stats is a snapshot of a semaphore, from one handle's view at one revision.
type Stats struct {
	Revision int64   // the etcd revision the snapshot describes
	Capacity int64   // the capacity (0 if never set)
	Held     int64   // units held by Holders; more than Capacity after a shrink
	Broken   bool    // broken, with BrokenReason
	Reason   string  // the reason given to Break
	Holders  []Entry // granted keys, oldest first
	Waiters  []Entry // waiting keys, in queue order
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

// Stats reads the semaphore as of now: it waits until this handle's view has
// caught up with etcd (one read), then reports it. A handle learns the state of
// keys older than itself by replaying their history when it starts; if that
// history was compacted, keys that did not fit then are reported as waiters,
// though some may be holders kept by a shrinking Resize.
func (s *Semaphore) Stats(ctx context.Context) (Stats, error) {
	if err := s.errIfClosed("stats"); err != nil {
		return Stats{}, err
	}
	if err := s.catchUp(ctx); err != nil {
		return Stats{}, s.errorf("stats", "%w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Revision: s.q.rev, Capacity: s.q.capacity, Broken: s.q.broken, Reason: s.q.reason}
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
