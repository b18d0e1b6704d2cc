package etcdsem

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A lease is the etcd lease every key of one handle is attached to, with a loss
// detector that errs early.
//
// The loss rule: the server expires the lease TTL after it last received a
// renewal, or later (a new leader extends every lease). A renewal is received
// after it was sent, so "TTL after the send of the last acknowledged renewal" is
// never later than the expiry on the server, as long as the two clocks run at the
// same rate; the safety margin covers a rate difference and a late timer. The
// lease is declared lost at sent+TTL-margin: strictly before the server can
// expire it, delete its keys and so let anyone else be granted their units
// (other holders' grants need those deletions; see the rule in doc.go).
// etcd's own Session instead counts from when the reply arrived and checks once
// a second, which can put the notice after the next grant.
type lease struct {
	id     clientv3.LeaseID
	ttl    time.Duration // as granted by the server
	margin time.Duration // fixed at creation
	lost   chan struct{} // closed once, when the lease is (believed) lost
	stop   chan struct{} // closed by close
	done   chan struct{} // closed when the keepalive goroutine has returned

	onLost func(*lease) // run once, on its own goroutine or the caller's of fail, when lost

	mu       sync.Mutex
	deadline time.Time // guarded by mu: loss is declared when it passes without a renewal
	cause    error     // guarded by mu: why lost was closed; nil while open
	timer    *time.Timer
}

// grantLease creates a lease and starts renewing it. onLost runs once, on its own
// goroutine, when the lease is lost (not when it is closed).
func grantLease(ctx context.Context, cli *clientv3.Client, ttl, margin time.Duration, onLost func(*lease)) (*lease, error) {
	secs := int64((ttl + time.Second - 1) / time.Second)
	sent := time.Now()
	resp, err := cli.Grant(ctx, secs)
	if err != nil {
		return nil, err
	}
	l := &lease{
		id:     resp.ID,
		ttl:    time.Duration(resp.TTL) * time.Second,
		margin: margin,
		lost:   make(chan struct{}),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		onLost: onLost,
	}
	if l.margin >= l.ttl {
		// A margin as long as the TTL would declare the lease lost at once.
		l.margin = l.ttl / 2
	}
	// Under mu: the timer may fire at once (a grant slower than TTL-margin),
	// and its callback reads l.timer.
	l.mu.Lock()
	l.deadline = sent.Add(l.ttl - l.margin)
	l.timer = time.AfterFunc(time.Until(l.deadline), func() { l.checkDeadline(onLost) })
	l.mu.Unlock()
	go l.keepAlive(cli, sent)
	return l, nil
}

// checkDeadline runs on the timer. It declares the lease lost if the deadline
// has passed, and otherwise re-arms the timer for the (later) deadline: renew
// only ever moves the deadline later, so the timer may fire early, never late.
func (l *lease) checkDeadline(onLost func(*lease)) {
	l.mu.Lock()
	if l.cause != nil {
		l.mu.Unlock()
		return
	}
	if left := time.Until(l.deadline); left > 0 {
		l.timer.Reset(left)
		l.mu.Unlock()
		return
	}
	l.markLocked(fmt.Errorf("lease %x not renewed within its TTL of %v minus a margin of %v: %w", int64(l.id), l.ttl, l.margin, ErrLost))
	l.mu.Unlock()
	onLost(l)
}

// fail declares the lease lost now: etcd said it does not know it.
func (l *lease) fail(cause error) {
	l.mu.Lock()
	if l.cause != nil {
		l.mu.Unlock()
		return
	}
	l.markLocked(cause)
	l.mu.Unlock()
	l.onLost(l)
}

// markLocked closes lost with the cause. l.mu must be held and cause be nil.
func (l *lease) markLocked(cause error) {
	l.cause = cause
	l.timer.Stop()
	close(l.lost)
}

// expired reports whether l is lost, or its deadline has passed (its timer
// may not have fired yet).
func (l *lease) expired() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause != nil || !time.Now().Before(l.deadline)
}

// err returns why the lease was lost or closed, or nil.
func (l *lease) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// keepAlive renews the lease every third of its TTL, counted from granted (the
// send of the grant, from which the first deadline counts: over a slow link
// the first renewal is sent as soon as the grant's reply arrives, not a third
// of the TTL after it), and again shortly after a renewal fails, until the
// lease is lost or closed. Renewals run concurrently,
// each bounded by the TTL: a slow reply still counts (from its own send time),
// and a connection that went silent does not hold back the next attempt, which
// the client may send over another connection. The deadline moves to
// sent+TTL-margin of each acknowledged renewal, where sent is taken before the
// request leaves, and only ever moves later.
func (l *lease) keepAlive(cli *clientv3.Client, granted time.Time) {
	defer close(l.done)
	ctx, cancel := context.WithCancel(context.Background())
	var attempts sync.WaitGroup
	defer attempts.Wait()
	defer cancel()
	interval := l.ttl / 3
	retry := min(l.ttl/20, 100*time.Millisecond)
	failed := make(chan struct{}, 1)
	next := time.NewTimer(time.Until(granted.Add(interval)))
	defer next.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.lost:
			return
		case <-failed:
			next.Reset(retry)
			continue
		case <-next.C:
		}
		next.Reset(interval)
		attempts.Add(1)
		go func() {
			defer attempts.Done()
			sent := time.Now()
			actx, acancel := context.WithTimeout(ctx, l.ttl)
			resp, err := cli.KeepAliveOnce(actx, l.id)
			acancel()
			switch {
			case err != nil && classify(err) == rpcLeaseGone || err == nil && resp.TTL <= 0:
				l.fail(fmt.Errorf("lease %x expired or revoked on the server: %w", int64(l.id), ErrLost))
			case err != nil:
				select {
				case failed <- struct{}{}:
				default:
				}
			default:
				l.mu.Lock()
				if d := sent.Add(time.Duration(resp.TTL)*time.Second - l.margin); d.After(l.deadline) {
					l.deadline = d
				}
				l.mu.Unlock()
			}
		}()
	}
}

// close stops renewing and revokes the lease, which deletes its keys. It does not
// close lost: the keys were given up, not lost.
func (l *lease) close(ctx context.Context, cli *clientv3.Client) error {
	l.mu.Lock()
	if l.cause == nil {
		l.cause = ErrClosed
		l.timer.Stop()
	}
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	_, err := cli.Revoke(ctx, l.id)
	if err != nil && classify(err) == rpcLeaseGone {
		err = nil
	}
	return err
}
