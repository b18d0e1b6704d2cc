package etcdsem

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A mirror is what a session's watch keeps up to date: a copy of a range of
// keys at a revision. The watch delivers each response in order, re-watches
// from next() after any error, and calls resync when the history it needs
// was compacted.
type mirror interface {
	// next returns the first revision the mirror has not applied.
	next() int64
	// apply applies one watch response: its events, whole revisions in
	// order, and, for a progress notification, the revision the watch has
	// delivered every event up to.
	apply(resp clientv3.WatchResponse)
	// resync re-reads the range after the history since next() was
	// compacted; it returns false if the read failed (the watch tries again).
	resync(ctx context.Context) bool
}

// watch keeps m, the mirror of the range [start, end), up to date on a
// goroutine of the session, until it closes: one watch per mirror, shared by
// all its waiters and holders, so a release costs every handle one event and
// no extra RPC however many of its callers wait. It asks for a leader, so a
// member cut off from the quorum does not leave it silently stale; on any
// error it re-watches from the next revision the mirror has not applied, and
// after a compaction it re-reads (resync). A progress notification (see
// requestProgress) moves the mirror to its revision: the watch has then
// delivered every event of the range up to it.
func (s *session) watch(start, end string, m mirror) {
	s.spawn(func() {
		for s.ctx.Err() == nil {
			wctx, cancel := context.WithCancel(watchContext(s.ctx))
			for resp := range s.cli.Watch(wctx, start, clientv3.WithRange(end), clientv3.WithRev(m.next())) {
				if resp.CompactRevision != 0 {
					m.resync(s.ctx)
					break
				}
				if resp.Canceled || resp.Err() != nil {
					break
				}
				m.apply(resp)
			}
			cancel()
			select {
			case <-s.ctx.Done():
			case <-time.After(50 * time.Millisecond): // do not spin against a failing cluster
			}
		}
	})
}

// watchContext is the context of the session's watches. The client
// multiplexes watches on one stream per context metadata, and a progress
// request reaches the stream of its context's metadata: requestProgress asks
// through the same.
func watchContext(ctx context.Context) context.Context { return clientv3.WithRequireLeader(ctx) }

// requestProgress asks for a progress notification on the watches' stream. It
// is best effort: a caller waiting for a revision asks again until its mirror
// gets there.
func (s *session) requestProgress() {
	ctx, cancel := context.WithTimeout(watchContext(s.ctx), time.Second)
	defer cancel()
	_ = s.cli.RequestProgress(ctx)
}
