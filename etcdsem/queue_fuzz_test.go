package etcdsem

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// modelKey is the model's record of a queue key.
type modelKey struct {
	name     string
	rev, n   int64
	granted  bool
	dead     bool
	grantRev int64
}

// FuzzQueueRule drives the mirror (queue) with random histories of queue-key
// creations and deletions, weight drops, capacity changes, breaks and repairs,
// one revision each, and checks it against a plain model of the rule and
// against the guarantees: grants fit the capacity when made, granted keys are
// a prefix of the live queue, a grant is never taken back.
func FuzzQueueRule(f *testing.F) {
	f.Add([]byte{2, 3, 0, 1, 0, 2, 0, 1, 1, 0, 1, 0})
	f.Add([]byte{2, 5, 0, 3, 0, 2, 2, 1, 1, 0, 0, 1})
	f.Add([]byte{0, 1, 3, 0, 0, 2, 4, 0, 2, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := replayHandle("f")
		var (
			model    []*modelKey
			capacity int64
			broken   bool
			rev      int64 = 1
			seq      int
		)
		put := func(key, val string, create int64) *clientv3.Event {
			return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(val), CreateRevision: create, ModRevision: rev}}
		}
		del := func(key string) *clientv3.Event {
			return &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev}}
		}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%6, int64(ops[i+1])
			rev++
			var ev *clientv3.Event
			switch op {
			case 0: // a new acquire
				seq++
				k := &modelKey{name: fmt.Sprintf("f/q/%d", seq), rev: rev, n: arg % 4}
				model = append(model, k)
				ev = put(k.name, fmt.Sprint(k.n), rev)
			case 1: // a key leaves (release, cancel, expiry)
				if len(model) == 0 {
					continue
				}
				j := int(arg) % len(model)
				ev = del(model[j].name)
				model = append(model[:j], model[j+1:]...)
			case 2:
				capacity = arg % 6
				ev = put("f/cap", formatUnits(capacity), 1)
			case 3:
				broken = true
				ev = put("f/broken", "reason", 1)
			case 4:
				broken = false
				ev = del("f/broken")
			case 5: // a holder returns part of its units
				var k *modelKey
				for _, m := range model {
					if m.granted && m.n > 0 {
						k = m
						break
					}
				}
				if k == nil {
					continue
				}
				k.n -= 1 + arg%k.n
				ev = put(k.name, fmt.Sprint(k.n), k.rev)
			}
			s.q.applyEvents([]*clientv3.Event{ev})

			// The model.
			var sum, held int64
			newGrant := false
			for _, k := range model {
				if k.dead {
					continue
				}
				if !k.granted {
					if broken || k.n > capacity {
						k.dead = true
						continue
					}
					if sum+k.n <= capacity {
						k.granted, k.grantRev, newGrant = true, rev, true
					}
				}
				sum += k.n
			}
			waiting := false
			for _, k := range model {
				switch {
				case k.granted:
					require.False(t, waiting, "revision %d: %s granted behind a waiter", rev, k.name)
					held += k.n
				case !k.dead:
					waiting = true
				}
			}
			if newGrant {
				require.LessOrEqual(t, held, capacity, "revision %d: grants exceed the capacity", rev)
			}
			// The mirror agrees with the model, key by key.
			require.Len(t, s.q.keys, len(model))
			for j, k := range model {
				q := s.q.keys[j]
				require.Equal(t, k.name, q.key)
				require.Equal(t, k.granted, q.state == keyGranted, "revision %d: %s granted", rev, k.name)
				require.Equal(t, k.dead, q.state == keyDead, "revision %d: %s dead", rev, k.name)
				require.Equal(t, k.grantRev, q.grantRev, "revision %d: %s grant revision", rev, k.name)
			}
			require.Equal(t, rev, s.q.rev)
		}
	})
}
