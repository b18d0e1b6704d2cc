package etcdsem

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPool returns a block pool on no etcd (offlineHandle) at the given
// capacity, with no manager: the test plays the manager's part.
func testPool(capacity int64) *blockPool {
	return newBlockPool(offlineHandle(capacity), 1)
}

// testBlock returns the Units of a block of n units granted at token, as the
// handle's Acquire returns them.
func testBlock(p *blockPool, token, n int64) *Units {
	r := &request{h: p.h, n: n, state: stateHeld, createRev: token, lostCh: make(chan struct{}), done: make(chan struct{})}
	return &Units{h: p.h, hold: r, token: token}
}

// FuzzBlockAccounting drives a block pool's accounting with random blocks
// granted, local grants, releases and partial returns, units taken back and
// given back to the callers, weights settled in etcd, capacity changes,
// breaks and repairs, refused block requests and losses, and checks against
// a model of the callers' holdings:
//   - the bound: the callers of every epoch hold at most the blocks' kept
//     weights, which are at most their weights in etcd, block by block; and
//     the blocks keep at least the ledger's floor;
//   - nothing leaks: each epoch's callers hold exactly what the model says
//     its core counts, and the units free are the capacity less the
//     reserve and the units held;
//   - fencing: each grant's token is at least every block token added before
//     it, and the pair (token, sequence) increases with every grant;
//   - a loss tells every holder of every epoch (Lost closed, Err and Release
//     wrap ErrLost, Count 0) and starts an empty epoch.
func FuzzBlockAccounting(f *testing.F) {
	f.Add([]byte{0, 4, 1, 2, 1, 1, 2, 0, 4, 1, 5, 0})
	f.Add([]byte{0, 3, 0, 5, 1, 4, 3, 1, 4, 2, 6, 0, 1, 1})
	f.Add([]byte{0, 4, 1, 3, 9, 0, 2, 0, 9, 0, 1, 1, 8, 2, 1, 1, 10, 0, 1, 1, 5, 1, 6, 0})
	f.Add([]byte{0, 4, 0, 2, 1, 3, 1, 2, 4, 3, 7, 1, 5, 0, 8, 3, 2, 0, 5, 1, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		p := testPool(16)
		defer p.h.sess.stop()
		ctx := context.Background()
		type hold struct {
			u  *Units
			n  int64
			ep *epoch
		}
		var (
			holds     []*hold
			lostHolds []*Units
			rev       int64 = 1
			capacity  int64 = 16
			broken    bool
			maxToken  int64
			lastTok   int64
			lastSeq   int64
		)
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%11, int64(ops[i+1])
			ep := p.ep.Load()
			switch op {
			case 0: // etcd grants a block
				rev += 1 + arg%3
				p.addBlock(testBlock(p, rev, 1+arg%5))
				maxToken = rev
			case 1: // a caller asks for units; granted if free and nobody waits
				n := arg % 4
				if ep.local.TryAcquire(n) {
					u := p.grant(ep, n)
					assert.GreaterOrEqual(t, u.Token(), maxToken, "the token is at least every block's before")
					assert.True(t, u.Token() > lastTok || u.Token() == lastTok && u.Sequence() > lastSeq, "(token, sequence) increases")
					lastTok, lastSeq = u.Token(), u.Sequence()
					holds = append(holds, &hold{u, n, ep})
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
			case 4: // the manager takes units back
				p.ledger.mu.Lock()
				p.takeLocked(1 + arg%4)
				p.ledger.mu.Unlock()
			case 5: // the manager settles, and etcd applies one block's new weight
				p.ledger.mu.Lock()
				if cs := p.settleLocked(); len(cs) > 0 {
					c := cs[int(arg)%len(cs)]
					if arg&1 == 1 {
						p.takeLocked(1) // while the write was in flight
					}
					p.settledLocked(c.b, c.to)
				}
				p.ledger.mu.Unlock()
			case 6: // a block is lost
				p.ledger.mu.Lock()
				var b *ledgerBlock
				if bs := p.ledger.blocks; len(bs) > 0 {
					b = bs[int(arg)%len(bs)]
				}
				p.ledger.mu.Unlock()
				if b != nil {
					p.lose(b, blockLost(b.token, errors.Join(errors.New("block lost"), ErrLost)))
					for _, h := range holds {
						lostHolds = append(lostHolds, h.u)
					}
					holds = nil
				}
			case 7: // the manager gives units taken back to the callers
				p.ledger.mu.Lock()
				p.untakeLocked(1 + arg%4)
				p.ledger.mu.Unlock()
			case 8: // a Resize
				rev++
				capacity = arg % 24
				p.apply(fleetView{rev: rev, capacity: capacity, broken: broken})
			case 9: // a Break, or a Repair
				rev++
				broken = !broken
				p.apply(fleetView{rev: rev, capacity: capacity, broken: broken, reason: "maintenance"})
			case 10: // etcd refuses a block request for good
				p.refused(ep, errors.New("refused"))
			}

			ep = p.ep.Load()
			var held, heldNow, heldBefore int64
			for _, h := range holds {
				held += h.n
				if h.ep == ep {
					heldNow += h.n
				} else {
					heldBefore += h.n
				}
			}
			p.ledger.mu.Lock()
			u := p.usageLocked()
			var kept int64
			for _, b := range p.ledger.blocks {
				assert.GreaterOrEqual(t, b.kept, int64(0))
				assert.LessOrEqual(t, b.kept, b.remote, "a block's kept weight is at most its weight in etcd")
				kept += b.kept
			}
			assert.LessOrEqual(t, u.floor(), kept, "the blocks keep at least the floor")
			assert.LessOrEqual(t, held, kept, "the bound: callers hold at most the blocks' units")
			assert.Equal(t, heldNow, u.held, "the current epoch's callers' units")
			assert.Equal(t, heldNow, ep.inUse.Load(), "the current epoch counts its holders' units")
			assert.Equal(t, heldBefore, u.retired, "earlier epochs' callers' units")
			if ep.grants() {
				assert.Equal(t, capacity, ep.local.Capacity(), "the callers' semaphore has the semaphore's capacity")
				assert.Equal(t, max(capacity-ep.reserve-heldNow, 0), ep.local.Available(), "free: the capacity less the reserve and the units held")
			} else {
				assert.True(t, broken, "an epoch grants nobody only while broken")
			}
			p.ledger.mu.Unlock()
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
