package etcdsem

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// grantLog records the grants clients believed they got, for the checker.
type grantLog struct {
	mu     sync.Mutex
	grants []clientGrant
	local  []localGrant // block mode's grants, which have no key of their own
}

// localGrant is a block-mode grant: the block token and the handle's
// sequence number, its fencing token.
type localGrant struct {
	handle     *blockPool
	token, seq int64
}

type clientGrant struct {
	key      string
	token    int64
	n        int64
	grantRev int64
}

func (g *grantLog) add(u *Units) {
	if h, ok := u.hold.(*localHold); ok {
		g.mu.Lock()
		g.local = append(g.local, localGrant{handle: h.p, token: u.token, seq: u.seq})
		g.mu.Unlock()
		return
	}
	r := u.req()
	r.h.mu.Lock()
	c := clientGrant{key: r.key, token: u.token, n: r.n, grantRev: r.grantRev}
	r.h.mu.Unlock()
	g.mu.Lock()
	g.grants = append(g.grants, c)
	g.mu.Unlock()
}

// addHeld records the grants of every request of s held now, for callers that
// never see the Units (WithSemaphore's fn).
func (g *grantLog) addHeld(s *Semaphore) {
	s.mu.Lock()
	var cs []clientGrant
	for _, r := range s.mine {
		if r.state == stateHeld {
			cs = append(cs, clientGrant{key: r.key, token: r.createRev, n: r.n, grantRev: r.grantRev})
		}
	}
	s.mu.Unlock()
	g.mu.Lock()
	g.grants = append(g.grants, cs...)
	g.mu.Unlock()
}

// checkHistoryAtEnd runs checkHistory over the semaphore name when the test
// ends, through a client of its own on endpoint. Cleanups run last in, first
// out: call it before creating the handles, so that it runs after they closed.
func checkHistoryAtEnd(t *testing.T, endpoint, name string, log *grantLog) {
	t.Helper()
	t.Cleanup(func() {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		require.NoError(t, err)
		defer cli.Close()
		checkHistory(t, cli, name, log)
	})
}

// histKey is the checker's own record of a queue key.
type histKey struct {
	createRev int64
	n         int64
	granted   bool
	dead      bool
	grantRev  int64
}

// checkHistory replays every revision of the semaphore's keys from the first
// and asserts at each revision:
//   - capacity: when a key is granted, the weights of all granted keys add up
//     to at most the capacity at that revision (a shrinking Resize may later
//     leave holders above it: holders are never revoked);
//   - FIFO: the granted keys are a prefix of the live keys in create order, so
//     no key was granted while an earlier one waited;
//   - no double grant: every grant a client believed it got is one the rule
//     granted, of a key that existed with that token, at or before the
//     revision the client decided at; and no two client grants share a key.
//
// It returns the number of grants the rule made.
func checkHistory(t *testing.T, cli *clientv3.Client, name string, log *grantLog) int {
	t.Helper()
	layout := keysOf(name)
	sem := &histSem{layout: layout, keys: map[string]*histKey{}}
	return checkHistoryOf(t, cli, layout, func(string) *histSem { return sem }, log)
}

// checkSetHistory is checkHistory for every key of the Set name at once, each
// key's semaphore replayed apart, with the capacity capacityOf gives it.
func checkSetHistory(t *testing.T, cli *clientv3.Client, name string, capacityOf func(string) int64, log *grantLog) int {
	t.Helper()
	sp := setPrefix(name)
	sems := map[string]*histSem{}
	unescape := strings.NewReplacer("%2F", "/", "%25", "%")
	return checkHistoryOf(t, cli, keyLayout{prefix: sp, rprefix: clientv3.GetPrefixRangeEnd(sp)}, func(etcdKey string) *histSem {
		rest := etcdKey[len(sp):]
		i := strings.IndexByte(rest, '/')
		require.GreaterOrEqual(t, i, 0, "a key of the Set outside every key's prefix: %q", etcdKey)
		escaped := rest[:i]
		sem := sems[escaped]
		if sem == nil {
			key := unescape.Replace(escaped)
			sem = &histSem{layout: setKeysOf(sp, key), keys: map[string]*histKey{}, fixed: true, capacity: capacityOf(key)}
			sems[escaped] = sem
		}
		return sem
	}, log)
}

// histSem is the checker's replay of one semaphore.
type histSem struct {
	layout   keyLayout
	keys     map[string]*histKey
	capacity int64
	fixed    bool // a Set's key: the capacity is fixed, there is no cap key
	broken   bool
	// grantedAt[key] = (createRev, grantRev) for every key the rule granted
	grantedAt map[string][][2]int64
}

// checkHistoryOf replays every revision of the range of layout (from its
// prefix to its rprefix) through the semaphore semOf returns for each key,
// checking checkHistory's guarantees, and returns the number of grants.
func checkHistoryOf(t *testing.T, cli *clientv3.Client, layout keyLayout, semOf func(etcdKey string) *histSem, log *grantLog) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	head, err := cli.Get(ctx, layout.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	last := head.Header.Revision

	var (
		grants   int
		all      = map[*histSem]bool{}
		believed = map[int64][]clientGrant{} // by grantRev
		seen     = map[string]bool{}
	)
	if log != nil {
		log.mu.Lock()
		for _, g := range log.grants {
			assert.False(t, seen[g.key+"@"+strconv.FormatInt(g.token, 10)], "no double grant: key %s token %d reported twice", g.key, g.token)
			seen[g.key+"@"+strconv.FormatInt(g.token, 10)] = true
			believed[g.grantRev] = append(believed[g.grantRev], g)
		}
		log.mu.Unlock()
	}
	settle := func(sem *histSem, rev int64) {
		keys := sem.keys
		ordered := make([]string, 0, len(keys))
		for k := range keys {
			ordered = append(ordered, k)
		}
		sort.Slice(ordered, func(i, j int) bool { return keys[ordered[i]].createRev < keys[ordered[j]].createRev })
		var sum, held int64
		newGrant := false
		for _, name := range ordered {
			k := keys[name]
			if k.dead {
				continue
			}
			if !k.granted {
				switch {
				case sem.broken || k.n > sem.capacity:
					k.dead = true
					continue
				case sum+k.n <= sem.capacity:
					k.granted, k.grantRev, newGrant = true, rev, true
					grants++
					if sem.grantedAt == nil {
						sem.grantedAt = map[string][][2]int64{}
					}
					sem.grantedAt[name] = append(sem.grantedAt[name], [2]int64{k.createRev, rev})
				}
			}
			sum += k.n
		}
		waitingSeen := false
		for _, name := range ordered {
			k := keys[name]
			if k.dead {
				continue
			}
			if k.granted {
				held += k.n
				assert.False(t, waitingSeen, "FIFO at revision %d: %s granted behind a waiting key", rev, name)
			} else {
				waitingSeen = true
			}
		}
		if newGrant {
			assert.LessOrEqual(t, held, sem.capacity, "capacity at revision %d: %d units granted, capacity %d (%s)", rev, held, sem.capacity, sem.layout.prefix)
		}
	}
	// checkBelieved checks the grants clients believed they got at rev,
	// once every semaphore the revision touched is settled (one revision
	// may touch several: a lease's expiry deletes all its keys at once).
	checkBelieved := func(rev int64) {
		for _, g := range believed[rev] {
			k := semOf(g.key).keys[g.key]
			if assert.NotNil(t, k, "client grant of %s at revision %d: key absent", g.key, rev) {
				assert.Equal(t, g.token, k.createRev, "client grant of %s: token", g.key)
				assert.True(t, k.granted, "client grant of %s at revision %d: the rule had not granted it", g.key, rev)
				assert.LessOrEqual(t, k.grantRev, rev, "client grant of %s: granted by the rule later", g.key)
			}
		}
		delete(believed, rev)
	}

	if last > 0 {
		err := replay(ctx, cli, layout, 1, last, func(evs []*clientv3.Event) {
			touched := map[*histSem]bool{}
			var order []*histSem
			for _, ev := range evs {
				key := string(ev.Kv.Key)
				sem := semOf(key)
				all[sem] = true
				if !touched[sem] {
					touched[sem] = true
					order = append(order, sem)
				}
				l := sem.layout
				switch {
				case key == l.capKey && !sem.fixed:
					sem.capacity = 0
					if ev.Type == mvccpb.PUT {
						sem.capacity, _ = strconv.ParseInt(string(ev.Kv.Value), 10, 64)
					}
				case key == l.brokenKey:
					sem.broken = ev.Type == mvccpb.PUT
				case strings.HasPrefix(key, l.qprefix):
					if ev.Type == mvccpb.DELETE {
						delete(sem.keys, key)
						continue
					}
					f := strings.Fields(string(ev.Kv.Value))
					n, err := strconv.ParseInt(f[0], 10, 64)
					require.NoError(t, err)
					if k := sem.keys[key]; k != nil {
						assert.LessOrEqual(t, n, k.n, "a key's weight only drops (%s)", key)
						k.n = n
					} else {
						sem.keys[key] = &histKey{createRev: ev.Kv.CreateRevision, n: n}
					}
				}
			}
			for _, sem := range order {
				settle(sem, evs[0].Kv.ModRevision)
			}
			checkBelieved(evs[0].Kv.ModRevision)
		})
		require.NoError(t, err, "reading the history")
	}
	for rev, gs := range believed {
		for _, g := range gs {
			t.Errorf("client grant of %s at revision %d: no such revision in the history", g.key, rev)
		}
	}
	granted := map[int64]bool{}
	for sem := range all {
		for key, gs := range sem.grantedAt {
			created := map[int64]bool{}
			for _, g := range gs {
				assert.False(t, created[g[0]], "no double grant: %s (token %d) granted twice", key, g[0])
				created[g[0]] = true
				granted[g[0]] = true
			}
		}
	}
	if log != nil {
		checkLocalGrants(t, log, granted)
	}
	return grants
}

// checkLocalGrants checks block mode's grants against the history: each one's
// token is the create revision of a key the rule granted (a block), and on
// each handle the fencing tokens (Token, Sequence) increase with the sequence,
// which numbers the handle's grants in the order made.
func checkLocalGrants(t *testing.T, log *grantLog, granted map[int64]bool) {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	byHandle := map[*blockPool][]localGrant{}
	for _, g := range log.local {
		if g.token != 0 { // 0: a grant of 0 units before the handle had any block
			assert.True(t, granted[g.token], "local grant %d of token %d: no block of that token was granted", g.seq, g.token)
		}
		byHandle[g.handle] = append(byHandle[g.handle], g)
	}
	for _, gs := range byHandle {
		sort.Slice(gs, func(i, j int) bool { return gs[i].seq < gs[j].seq })
		for i := 1; i < len(gs); i++ {
			assert.Less(t, gs[i-1].seq, gs[i].seq, "no two local grants share a sequence number")
			assert.LessOrEqual(t, gs[i-1].token, gs[i].token, "fencing order: grant %d has token %d after grant %d had %d", gs[i].seq, gs[i].token, gs[i-1].seq, gs[i-1].token)
		}
	}
}
