package etcdsem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// An AuditReport is the result of Audit.
type AuditReport struct {
	Revisions  int      // revisions of the semaphore's keys replayed (reports aside)
	Grants     int      // keys granted by the rule
	Violations []string // broken guarantees, one line each; empty when clean
}

// Audit replays the whole revision history of the semaphore's keys but the
// reports, from revision 1 to now, through the grant rule, and checks at every
// revision that the units granted when a key is granted are at most the
// capacity and that the granted keys are a prefix of the live queue (strict FIFO). It needs the
// history to be uncompacted. It is for tests, examples and operators; it reads
// the whole history, so it is slow on a long-lived cluster.
func Audit(ctx context.Context, cli *clientv3.Client, name string) (AuditReport, error) {
	var rep AuditReport
	keys := keysOf(name)
	head, err := cli.Get(ctx, keys.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return rep, err
	}
	last := head.Header.Revision
	s := replayHandle(name) // decides nothing for anyone: it only replays
	check := func(rev int64) {
		s.q.settle(rev)
		rep.Revisions++
		var held int64
		newGrant, waiting := false, false
		for _, k := range s.q.keys {
			switch k.state {
			case keyGranted:
				if waiting {
					rep.Violations = append(rep.Violations, fmt.Sprintf("revision %d: %s granted behind a waiting key", rev, k.key))
				}
				held += k.n
				if k.grantRev == rev {
					newGrant = true
					rep.Grants++
				}
			case keyWaiting:
				waiting = true
			}
		}
		if newGrant && held > s.q.capacity {
			rep.Violations = append(rep.Violations, fmt.Sprintf("revision %d: %d units granted, capacity %d", rev, held, s.q.capacity))
		}
	}
	if last == 0 {
		return rep, nil
	}
	err = replay(ctx, cli, keys, 1, last, func(evs []*clientv3.Event) {
		for _, ev := range evs {
			if ev.Type == mvccpb.DELETE {
				s.q.delete(string(ev.Kv.Key))
			} else {
				s.q.put(ev.Kv)
			}
		}
		check(evs[0].Kv.ModRevision)
	})
	return rep, err
}

// replay calls apply with the events of each revision of the state of one
// semaphore (its keys but the reports) from revision from to revision to, in
// order. It knows it has seen them all
// when an event past to arrives, or when a progress notification (which the
// server sends only once the watch has caught up) reports revision to or later:
// a response's header revision alone says nothing of how far its events go.
func replay(ctx context.Context, cli *clientv3.Client, k keyLayout, from, to int64, apply func([]*clientv3.Event)) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var batch []*clientv3.Event
	flush := func() {
		if len(batch) > 0 {
			apply(batch)
			batch = nil
		}
	}
	wch := cli.Watch(wctx, k.prefix, k.stateRange(), clientv3.WithRev(from))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			_ = cli.RequestProgress(wctx) // best effort: the next tick asks again
			continue
		case resp, ok := <-wch:
			if !ok {
				if err := ctx.Err(); err != nil {
					return err
				}
				return errors.New("watch ended before the history was read")
			}
			if err := resp.Err(); err != nil {
				return err
			}
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision > to {
					flush()
					return nil
				}
				if len(batch) > 0 && batch[0].Kv.ModRevision != ev.Kv.ModRevision {
					flush()
				}
				batch = append(batch, ev)
			}
			flush() // a response holds whole revisions
			if resp.IsProgressNotify() && resp.Header.Revision >= to {
				return nil
			}
		}
	}
}

// replayHandle returns a handle that only replays history, for Audit and
// tests: its session is closed, so nothing it decides reaches etcd.
func replayHandle(name string) *handle {
	sess := &session{onLost: func(*lease) {}}
	sess.closed.Store(true)
	return newHandle(sess, name, "")
}
