package etcdsem

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Reports: a block-mode handle's callers are served from its blocks with no
// key of their own, so each block-mode handle publishes them in a key of its
// own, P + "r/<lease>", under its lease: Stats, semctl and the debug page of
// any handle then see the whole fleet. The key is outside the state's range
// (keys.go), so no handle's watch sees a report written, and the lease's end
// (Close revokes it) deletes it.

// A Report is what a block-mode handle last published of its callers: those
// it serves from its blocks, which have no key of their own.
type Report struct {
	Lease    int64         // the handle's lease, as in its keys' Entry.Lease
	Client   string        // the handle's WithClientName
	Holders  int           // callers holding units of its blocks
	Held     int64         // the units they hold
	Waiters  int           // callers waiting for units
	Awaited  int64         // the units they wait for
	Blocks   int64         // units of its blocks its callers may use
	Acquired uint64        // calls of its callers granted since the handle started
	Age      time.Duration // since written, by the writer's clock
}

// reportPause is the least time between two reports of a handle whose
// callers keep changing: a busy handle writes one report per reportPause.
const reportPause = 2 * time.Second

// callers is what a report says of a handle's callers.
type callers struct {
	holders, waiters      int
	held, awaited, blocks int64
	granted               uint64
}

// callers reads the pool's callers: those of every epoch still holding
// units, and those waiting.
func (p *blockPool) callers() callers {
	waiters, awaited, _ := p.waiting.read()
	c := callers{waiters: waiters, awaited: awaited, granted: p.granted.Load()}
	l := &p.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ep := range append([]*epoch{p.ep.Load()}, l.retired...) {
		c.holders += int(ep.holds.Load())
		c.held += ep.inUse.Load()
	}
	for _, b := range l.blocks {
		c.blocks += b.kept
	}
	return c
}

// reportState is the handle's report as last written, owned by the manager.
type reportState struct {
	said   callers          // what the last report written says
	on     clientv3.LeaseID // the lease it was written under; 0 before the first
	at     time.Time        // when it was written
	failed bool             // the last write failed: the next is tried at the idle tick
}

// publish writes the handle's report if it is due: at once on a lease it has
// not written on (its last report went with its old lease) once it has held
// a block or had callers waiting, and otherwise when its callers changed and
// reportPause has passed since the last write. It runs on the manager, which
// owns the report's state; a failed write is tried again at the next idle
// tick.
func (m *blockManager) publish(idle bool) {
	r, h := &m.report, m.p.h
	if r.failed && !idle {
		return
	}
	l := h.sess.current()
	if l == nil {
		return // no lease to write under: the next one is written at once
	}
	c := m.p.callers()
	switch {
	case l.id != r.on:
		if r.on == 0 && c.blocks == 0 && c.waiters == 0 {
			return // no block and no caller yet: nothing to show
		}
	case c == r.said || time.Since(r.at) < reportPause:
		return
	}
	now := time.Now()
	ctx, cancel := m.rpc.context(h.sess.ctx)
	_, err := h.sess.cli.Put(ctx, h.reportKey(l.id), formatReport(c, now, h.clientTag), clientv3.WithLease(l.id))
	m.rpc.ended(ctx, err)
	cancel()
	r.failed = err != nil
	if err == nil {
		r.said, r.on, r.at = c, l.id, now
	}
}

// readReports reads every handle's report, with the revision read at.
func (h *handle) readReports(ctx context.Context) ([]Report, int64, error) {
	resp, err := h.sess.cli.Get(ctx, h.rprefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	now := time.Now()
	var out []Report
	for _, kv := range resp.Kvs {
		if r, ok := parseReport(kv.Value, now); ok {
			r.Lease = kv.Lease
			out = append(out, r)
		}
	}
	return out, resp.Header.Revision, nil
}

// formatReport and parseReport are a report's value: "holders held waiters
// awaited blocks granted unixnano client", the label last as it may hold
// spaces.
func formatReport(c callers, written time.Time, client string) string {
	f := []string{
		strconv.Itoa(c.holders), strconv.FormatInt(c.held, 10),
		strconv.Itoa(c.waiters), strconv.FormatInt(c.awaited, 10),
		strconv.FormatInt(c.blocks, 10), strconv.FormatUint(c.granted, 10),
		strconv.FormatInt(written.UnixNano(), 10), client,
	}
	return strings.Join(f, " ")
}

// parseReport reads a report's value at now. A value this package did not
// write (a field missing, not a number, or negative) is no report.
func parseReport(v []byte, now time.Time) (Report, bool) {
	f := strings.SplitN(string(v), " ", 8)
	if len(f) != 8 {
		return Report{}, false
	}
	var n [7]int64
	for i := range n {
		x, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || x < 0 && i != 6 {
			return Report{}, false
		}
		n[i] = x
	}
	if n[0] > math.MaxInt || n[2] > math.MaxInt {
		return Report{}, false
	}
	return Report{
		Client:  f[7],
		Holders: int(n[0]), Held: n[1], Waiters: int(n[2]), Awaited: n[3],
		Blocks: n[4], Acquired: uint64(n[5]),
		Age: now.Sub(time.Unix(0, n[6])),
	}, true
}
