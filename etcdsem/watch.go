package etcdsem

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// watch keeps the mirror (s.q) up to date: one watch on the semaphore's state
// (its keys but the reports, see keys.go) per handle, shared by all its
// waiters and holders, so a release costs every handle one event and no extra
// RPC however many of its callers wait. It asks for a
// leader, so a member cut off from the quorum does not leave it silently stale;
// on any error it re-watches from the next revision it has not applied, and
// after a compaction it re-reads (resync). A progress notification (see
// waitRevision) moves the mirror to its revision: the watch has then delivered
// every event of the semaphore's keys up to it.
func (s *Semaphore) watch(ctx context.Context) {
	defer s.wg.Done()
	for ctx.Err() == nil {
		s.mu.Lock()
		from := s.q.rev + 1
		s.mu.Unlock()
		wctx, cancel := context.WithCancel(watchContext(ctx))
		for resp := range s.cli.Watch(wctx, s.prefix, s.stateRange(), clientv3.WithRev(from)) {
			if resp.CompactRevision != 0 {
				s.resync(ctx)
				break
			}
			if resp.Canceled || resp.Err() != nil {
				break
			}
			s.mu.Lock()
			s.q.applyEvents(resp.Events)
			if resp.IsProgressNotify() {
				s.q.advance(resp.Header.Revision)
			}
			s.mu.Unlock()
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond): // do not spin against a failing cluster
		}
	}
}

// watchContext is the context of the handle's watch. The client multiplexes
// watches on one stream per context metadata, and a progress request reaches
// the stream of its context's metadata: waitRevision asks through the same.
func watchContext(ctx context.Context) context.Context { return clientv3.WithRequireLeader(ctx) }

// resync re-reads the keys after the history the watch needed was compacted.
// Revisions were skipped, so this handle's waiters cannot know whether they
// were granted or failed in the gap: they fail with ErrLost and their keys are
// deleted (the units pass on if they had been granted). Holders stay holders.
func (s *Semaphore) resync(ctx context.Context) {
	resp, err := s.cli.Get(ctx, s.prefix, s.stateRange())
	if err != nil {
		return // the caller re-watches from the old revision and lands here again
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	present := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		present[string(kv.Key)] = true
	}
	for _, k := range append([]*qkey(nil), s.q.keys...) {
		if !present[k.key] {
			s.q.delete(k.key)
		}
	}
	if _, ok := present[s.brokenKey]; !ok {
		s.q.delete(s.brokenKey)
	}
	if _, ok := present[s.capKey]; !ok {
		s.q.delete(s.capKey)
	}
	for _, kv := range resp.Kvs {
		k := s.q.byKey[string(kv.Key)]
		if k != nil && k.createRev != kv.CreateRevision {
			s.q.delete(k.key)
		}
		s.q.put(kv)
	}
	for _, k := range s.q.keys {
		if k.state == keyWaiting {
			k.state = keyUnknown // its history is gone: count it, never grant it
		}
	}
	for key, r := range s.mine {
		if r.state == stateWaiting {
			r.finish(stateFailed, s.fail(acquireCall(r.n), nil, "place in the queue lost: watch history compacted: "+ErrLost.Error(), ErrLost))
		}
		if k := s.q.byKey[key]; k != nil && (r.state == stateFailed || r.state == stateAbandoned) {
			k.state = keyUnknown
			s.deleteLater(k.key, k.createRev)
		}
	}
	s.q.advance(resp.Header.Revision)
}
