package etcdsem

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPool returns a block pool with no manager and no etcd: the test plays
// the manager's part on the accounting.
func testPool() *blockPool {
	s := &Semaphore{name: "f"}
	s.bgCtx, s.stopWatch = context.WithCancel(context.Background())
	p := &blockPool{s: s, size: 1, wake: make(chan struct{}, 1), free: -1}
	p.ep.Store(newEpoch())
	p.seen.Store(&seen{capacity: 1 << 40})
	return p
}

// testBlock returns the Units of a granted block of n units at token, as the
// plain path returns them.
func testBlock(p *blockPool, token, n int64) *Units {
	r := &request{n: n, state: stateHeld, createRev: token, lost: make(chan struct{}), done: make(chan struct{})}
	return &Units{s: p.s, r: r, token: token}
}

// FuzzBlockAccounting drives a block pool's accounting with random blocks
// granted, local grants, releases and partial returns, units given back (to
// the pool's reserve, then to etcd) and losses, and checks against a model:
//   - the bound: the units callers hold are at most the units the blocks let
//     them use, which are at most the blocks' weights in etcd, block by block;
//   - nothing leaks: free units plus held units are exactly the blocks' local
//     units;
//   - fencing: each grant's token is at least every block token added before
//     it, and the pair (token, sequence) increases with every grant;
//   - a loss tells every holder of the epoch (Lost closed, Err and Release
//     wrap ErrLost, Count 0) and starts an empty epoch.
func FuzzBlockAccounting(f *testing.F) {
	f.Add([]byte{0, 4, 1, 2, 1, 1, 2, 0, 4, 1, 5, 0})
	f.Add([]byte{0, 3, 0, 5, 1, 4, 3, 1, 4, 2, 6, 0, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		p := testPool()
		defer func() {
			p.s.stopWatch()
			p.s.wg.Wait()
		}()
		ctx := context.Background()
		type hold struct {
			u *Units
			n int64
		}
		var (
			holds     []*hold
			lostHolds []*Units
			rev       int64
			maxToken  int64
			lastTok   int64
			lastSeq   int64
		)
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%8, int64(ops[i+1])
			ep := p.ep.Load()
			switch op {
			case 0: // etcd grants a block
				rev += 1 + arg%3
				p.addBlock(ep, testBlock(p, rev, 1+arg%5))
				maxToken = rev
			case 1: // a caller asks for units; granted if free
				n := arg % 4
				if ep.local.TryAcquire(n) {
					u := p.grant(ep, n)
					assert.GreaterOrEqual(t, u.Token(), maxToken, "the token is at least every block's before")
					assert.True(t, u.Token() > lastTok || u.Token() == lastTok && u.Sequence() > lastSeq, "(token, sequence) increases")
					lastTok, lastSeq = u.Token(), u.Sequence()
					holds = append(holds, &hold{u, n})
				}
			case 2: // a holder releases
				if len(holds) > 0 {
					j := int(arg) % len(holds)
					require.NoError(t, holds[j].u.Release(ctx))
					assert.Zero(t, holds[j].u.Count())
					holds = append(holds[:j], holds[j+1:]...)
				}
			case 3: // a holder returns part, or all, which is Release
				if len(holds) > 0 {
					j := int(arg) % len(holds)
					h := holds[j]
					m := arg % 3
					err := h.u.Return(ctx, m)
					switch {
					case m > h.n:
						assert.Error(t, err)
					case m == h.n:
						require.NoError(t, err)
						holds = append(holds[:j], holds[j+1:]...)
						h.n = 0
					default:
						require.NoError(t, err)
						h.n -= m
					}
					assert.Equal(t, h.n, h.u.Count())
				}
			case 7: // the manager stops taking units back
				p.mu.Lock()
				if p.reclaimer != nil {
					p.dequeueLocked(p.reclaimer)
					p.serveLocked(ep)
				}
				p.mu.Unlock()
			case 4: // the manager takes free units back, or queues to take them
				p.mu.Lock()
				if k := 1 + arg%4; !p.takeFreeLocked(ep, k) && p.reclaimer == nil {
					p.reclaimer = &localWaiter{n: k, reclaim: true, ready: make(chan struct{})}
					p.enqueueLocked(p.reclaimer)
					p.serveLocked(ep)
				}
				p.mu.Unlock()
			case 5: // etcd applies a block's new weight
				p.mu.Lock()
				if bs := p.ledger.unsettled(); len(bs) > 0 {
					// The weight written; a take may have lowered local since.
					b := bs[int(arg)%len(bs)]
					w := b.local + arg%2*min(1, b.remote-b.local)
					p.ledger.settled(b, w)
					if b.remote == 0 {
						close(b.gone)
					}
				}
				p.mu.Unlock()
			case 6: // a block is lost
				p.lose(ep, errors.Join(errors.New("block lost"), ErrLost))
				for _, h := range holds {
					lostHolds = append(lostHolds, h.u)
				}
				holds = nil
			}

			ep = p.ep.Load()
			var held int64
			for _, h := range holds {
				held += h.n
			}
			p.mu.Lock()
			local := p.ledger.local()
			for _, b := range p.ledger.blocks {
				assert.LessOrEqual(t, b.local, b.remote, "a block's local units are at most its weight")
				assert.GreaterOrEqual(t, b.local, int64(0))
			}
			p.mu.Unlock()
			assert.Equal(t, held, ep.inUse.Load(), "the epoch counts its holders' units")
			assert.LessOrEqual(t, held, local, "the bound: callers hold at most the blocks' units")
			assert.Equal(t, local, ep.local.Available()+held, "free and held units are the blocks' units")
			p.mu.Lock()
			if p.reclaimer != nil {
				assert.Greater(t, p.reclaimer.n, ep.local.Available(), "a reclaimer waits only while its units are not free")
			}
			p.mu.Unlock()
		}
		for _, u := range lostHolds {
			select {
			case <-u.Lost():
			default:
				t.Error("a holder of a lost epoch was not told")
			}
			assert.ErrorIs(t, u.Err(), ErrLost)
			assert.ErrorIs(t, u.Release(ctx), ErrLost)
			assert.Zero(t, u.Count())
		}
	})
}

// FuzzFairShare checks fairShare against its definition: the largest level L
// at which the demands, each cut at L, fit the capacity, found by search.
func FuzzFairShare(f *testing.F) {
	f.Add(int64(10), int64(7), []byte{3, 9})
	f.Add(int64(256), int64(16), []byte{16, 16, 16})
	f.Add(int64(0), int64(5), []byte{})
	f.Fuzz(func(t *testing.T, capacity, self int64, others []byte) {
		capacity, self = capacity&0xffff, self&0xffff
		ds := []int64{self}
		var os []int64
		for _, o := range others {
			os = append(os, int64(o))
			ds = append(ds, int64(o))
		}
		fits := func(level int64) bool {
			var sum int64
			for _, d := range ds {
				sum += min(d, level)
			}
			return sum <= capacity
		}
		want := self
		if !fits(self) {
			level := int64(0)
			for fits(level + 1) {
				level++
			}
			want = level
		}
		assert.Equal(t, want, fairShare(capacity, self, os), "capacity %d, self %d, others %v", capacity, self, os)
	})
}
