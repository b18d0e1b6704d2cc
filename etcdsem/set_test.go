package etcdsem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairsem/semaphore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// newSet returns a Set closed when the test ends (before its client).
func newSet(t testing.TB, cli *clientv3.Client, name string, capacityOf func(string) int64, opts ...Option) *Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := NewSet(ctx, cli, name, capacityOf, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// setKeysIn returns the number of keys of the Set name in etcd, at key alone
// if key is not nil.
func setKeysIn(t testing.TB, cli *clientv3.Client, name string, key *string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := setPrefix(name)
	if key != nil {
		p = setKeysOf(p, *key).prefix
	}
	resp, err := cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Count
}

func capacities(m map[string]int64, otherwise int64) func(string) int64 {
	return func(k string) int64 {
		if c, ok := m[k]; ok {
			return c
		}
		return otherwise
	}
}

func TestSet_EachKeyIsASemaphoreOfItsOwnCapacity(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := capacities(map[string]int64{"a": 2, "b": 1}, 3)
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	s := newSet(t, newClient(t, ep), name, capOf)
	ctx := testCtx(t, 20*time.Second)

	a, err := s.Acquire(ctx, "a", 2)
	require.NoError(t, err)
	log.add(a)
	assert.Equal(t, int64(2), a.Count())
	_, ok, err := s.TryAcquire(ctx, "a", 1)
	require.NoError(t, err)
	assert.False(t, ok, "a is full")
	b, ok, err := s.TryAcquire(ctx, "b", 1)
	require.NoError(t, err)
	require.True(t, ok, "b is its own semaphore")
	log.add(b)

	rpcs := rpcCount(t)
	_, err = s.Acquire(ctx, "b", 2)
	require.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.Equal(t, rpcs, rpcCount(t), "a request above the key's capacity fails before any RPC")
	o, known := semaphore.OutcomeOf(err)
	assert.True(t, known)
	assert.Equal(t, semaphore.TooLarge, o)
	assert.Contains(t, err.Error(), name+"/b")
	_, _, err = s.TryAcquire(ctx, "b", 2)
	require.ErrorIs(t, err, semaphore.ErrTooLarge)

	got := make(chan *Units, 1)
	go func() {
		u, err := s.Acquire(ctx, "a", 1)
		assert.NoError(t, err)
		got <- u
	}()
	waitFor(t, "the waiter's key is written", func() bool { k := "a"; return setKeysIn(t, s.sess.cli, name, &k) == 2 })
	select {
	case <-got:
		t.Fatal("granted while a was full")
	default:
	}
	require.NoError(t, a.Release(ctx))
	u := <-got
	log.add(u)
	assert.Greater(t, u.Token(), a.Token(), "tokens increase with every grant of a key")
	require.NoError(t, u.Release(ctx))
	require.NoError(t, b.Release(ctx))
	assert.Zero(t, setKeysIn(t, s.sess.cli, name, nil), "no key of the Set is left in etcd once every unit is back")
}

// checkSetHistoryAtEnd runs checkSetHistory when the test ends, through a
// client of its own on endpoint; call it before creating the Sets.
func checkSetHistoryAtEnd(t *testing.T, endpoint, name string, capacityOf func(string) int64, log *grantLog) {
	t.Helper()
	t.Cleanup(func() {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
		require.NoError(t, err)
		defer cli.Close()
		checkSetHistory(t, cli, name, capacityOf, log)
	})
}

// watchCounter counts the watches a client opens.
type watchCounter struct {
	clientv3.Watcher
	n atomic.Int64
}

func (w *watchCounter) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	w.n.Add(1)
	return w.Watcher.Watch(ctx, key, opts...)
}

func TestSet_OneLeaseAndOneWatchForAnyNumberOfKeys(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := func(string) int64 { return 1 }
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	cli := newClient(t, ep)
	wc := &watchCounter{Watcher: cli.Watcher}
	cli.Watcher = wc
	s := newSet(t, cli, name, capOf)
	ctx := testCtx(t, 60*time.Second)

	const keys = 200
	held := make([]*Units, keys)
	for i := range held {
		u, err := s.Acquire(ctx, fmt.Sprintf("tenant-%d", i), 1)
		require.NoError(t, err)
		log.add(u)
		held[i] = u
	}
	resp, err := cli.Get(ctx, setPrefix(name), clientv3.WithPrefix())
	require.NoError(t, err)
	require.Len(t, resp.Kvs, keys, "one key in etcd per holder, nothing else")
	leases := map[int64]bool{}
	for _, kv := range resp.Kvs {
		leases[kv.Lease] = true
	}
	assert.Len(t, leases, 1, "every key of the Set on one lease")
	assert.Equal(t, int64(1), wc.n.Load(), "one watch for every key of the Set")
	assert.Equal(t, keys, s.Keys())
	for _, u := range held {
		require.NoError(t, u.Release(ctx))
	}
}

func TestSet_AnIdleKeyIsGoneFromEtcdAndFromMemory(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := func(string) int64 { return 2 }
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	s := newSet(t, newClient(t, ep), name, capOf)
	ctx := testCtx(t, 60*time.Second)
	for i := range 100 {
		u, err := s.Acquire(ctx, fmt.Sprintf("k%d", i), 1+int64(i%2))
		require.NoError(t, err)
		log.add(u)
		require.NoError(t, u.Release(ctx))
	}
	assert.Zero(t, setKeysIn(t, s.sess.cli, name, nil), "no key left in etcd")
	require.Eventually(t, func() bool { return s.Keys() == 0 }, 10*time.Second, 10*time.Millisecond,
		"every idle key leaves memory within two sweeps")

	// A key used again after it left memory is read again from etcd.
	u, err := s.Acquire(ctx, "k1", 2)
	require.NoError(t, err)
	log.add(u)
	assert.Equal(t, 1, s.Keys())
	require.NoError(t, u.Release(ctx))
}

func TestSet_AKeyInUseStaysInMemory(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	s := newSet(t, newClient(t, ep), name, func(string) int64 { return 1 })
	ctx := testCtx(t, 30*time.Second)
	// A key a call uses stays, before it has any key in etcd.
	k, err := s.pin(ctx, "used", "Acquire", 1, acquireCall(1))
	require.NoError(t, err)
	for range 3 {
		s.sweepOnce()
	}
	assert.Equal(t, 1, s.Keys(), "a key a call uses stays")
	s.unpin(k)
	s.sweepOnce()
	s.sweepOnce()
	require.Zero(t, s.Keys())

	u, err := s.Acquire(ctx, "held", 1)
	require.NoError(t, err)
	// Three sweeps: a held key is never idle.
	for range 3 {
		s.sweepOnce()
	}
	assert.Equal(t, 1, s.Keys(), "a held key stays")
	require.NoError(t, u.Release(ctx))
	s.sweepOnce()
	assert.Equal(t, 1, s.Keys(), "one idle sweep keeps it")
	s.sweepOnce()
	assert.Zero(t, s.Keys(), "the second idle sweep drops it")
}

func TestSet_WaitersOfOneKeyAcrossProcessesAreServedInOrder(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := func(string) int64 { return 2 }
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	a := newSet(t, newClient(t, ep), name, capOf)
	b := newSet(t, newClient(t, ep), name, capOf)
	ctx := testCtx(t, 30*time.Second)
	key := "shared"

	held, err := a.Acquire(ctx, key, 2)
	require.NoError(t, err)
	log.add(held)
	// b enters the key while it is full: it reads a holder and waits.
	big := make(chan *Units, 1)
	go func() {
		u, err := b.Acquire(ctx, key, 2)
		assert.NoError(t, err)
		big <- u
	}()
	waitFor(t, "b's waiter is written", func() bool { return setKeysIn(t, a.sess.cli, name, &key) == 2 })
	small := make(chan *Units, 1)
	go func() {
		u, err := a.Acquire(ctx, key, 1)
		assert.NoError(t, err)
		small <- u
	}()
	waitFor(t, "a's later waiter is written", func() bool { return setKeysIn(t, a.sess.cli, name, &key) == 3 })
	_, ok, err := b.TryAcquire(ctx, key, 1)
	require.NoError(t, err)
	assert.False(t, ok, "a try never jumps a waiter")

	require.NoError(t, held.Release(ctx))
	u := <-big
	log.add(u)
	select {
	case <-small:
		t.Fatal("the small waiter jumped the large one")
	default:
	}
	require.NoError(t, u.Release(ctx))
	u = <-small
	log.add(u)
	require.NoError(t, u.Release(ctx))
}

func TestSet_ALostLeaseTellsTheHoldersOfEveryKey(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := func(string) int64 { return 1 }
	cli := newClient(t, ep)
	s := newSet(t, cli, name, capOf)
	ctx := testCtx(t, 30*time.Second)
	var held []*Units
	for i := range 5 {
		u, err := s.Acquire(ctx, fmt.Sprintf("k%d", i), 1)
		require.NoError(t, err)
		held = append(held, u)
	}
	_, err := cli.Revoke(ctx, clientv3.LeaseID(held[0].req().lease.id))
	require.NoError(t, err)
	for _, u := range held {
		select {
		case <-u.Lost():
		case <-ctx.Done():
			t.Fatal("a holder was not told of the loss")
		}
		assert.ErrorIs(t, u.Err(), ErrLost)
		assert.ErrorIs(t, u.Release(ctx), ErrLost)
	}
	u, err := s.Acquire(ctx, "k0", 1)
	require.NoError(t, err, "the Set takes a new lease")
	assert.Greater(t, u.Token(), held[0].Token())
	require.NoError(t, u.Release(ctx))
}

func TestSet_CloseEndsEveryCallAndGivesEveryUnitBack(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	cli := newClient(t, ep)
	ctx := testCtx(t, 30*time.Second)
	s, err := NewSet(ctx, cli, name, func(string) int64 { return 1 })
	require.NoError(t, err)
	u, err := s.Acquire(ctx, "x", 1)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, "x", 1)
		waited <- err
	}()
	waitFor(t, "the waiter is written", func() bool { k := "x"; return setKeysIn(t, cli, name, &k) == 2 })
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-waited, ErrClosed)
	assert.NoError(t, u.Release(ctx), "Close gave the units back")
	assert.Zero(t, setKeysIn(t, cli, name, nil))
	_, err = s.Acquire(ctx, "y", 1)
	assert.ErrorIs(t, err, ErrClosed)
	_, _, err = s.TryAcquire(ctx, "y", 1)
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, s.Close(), "Close is idempotent")
}

func TestSet_EveryKeyIsItsOwnWhateverBytesItHolds(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := func(string) int64 { return 1 }
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	s := newSet(t, newClient(t, ep), name, capOf)
	ctx := testCtx(t, 30*time.Second)
	keys := []string{"", "a", "a/b", "a%2Fb", "a/q/1", "%", "line\nbreak", "<b>markup</b>", strings.Repeat("x", 5000), "q", "r", "cap"}
	var held []*Units
	for _, k := range keys {
		u, ok, err := s.TryAcquire(ctx, k, 1)
		require.NoError(t, err, "key %q", k)
		require.True(t, ok, "key %q is its own semaphore", k)
		log.add(u)
		held = append(held, u)
	}
	for _, k := range keys {
		_, ok, err := s.TryAcquire(ctx, k, 1)
		require.NoError(t, err)
		assert.False(t, ok, "key %q is full", k)
	}
	_, err := s.Acquire(ctx, "line\nbreak", 2)
	require.ErrorIs(t, err, semaphore.ErrTooLarge)
	assert.NotContains(t, err.Error(), "line\nbreak", "a key is quoted in errors")
	for _, u := range held {
		require.NoError(t, u.Release(ctx))
	}

	_, err = s.Acquire(ctx, strings.Repeat("/", MaxNameLen/3+1), 1)
	assert.ErrorIs(t, err, rpctypes.ErrRequestTooLarge, "a key too long for etcd is refused before any RPC")
}

func TestSet_BadInputPanicsNamingTheValue(t *testing.T) {
	ep := sharedEndpoint(t)
	cli := newClient(t, ep)
	ctx := testCtx(t, 10*time.Second)
	one := func(string) int64 { return 1 }
	assert.PanicsWithValue(t, `etcdsem: NewSet("s"): nil client`, func() { _, _ = NewSet(ctx, nil, "s", one) })
	assert.PanicsWithValue(t, `etcdsem: NewSet(""): the name must not be empty`, func() { _, _ = NewSet(ctx, cli, "", one) })
	assert.PanicsWithValue(t, `etcdsem: NewSet("s"): nil capacity function`, func() { _, _ = NewSet(ctx, cli, "s", nil) })
	assert.Panics(t, func() { _, _ = NewSet(ctx, cli, "s", one, WithCapacity(2)) })
	assert.Panics(t, func() { _, _ = NewSet(ctx, cli, "s", one, WithBlocks(2)) })

	s := newSet(t, cli, testName(t), func(k string) int64 {
		if k == "bad" {
			return -1
		}
		return 1
	})
	assert.PanicsWithValue(t, fmt.Sprintf(`etcdsem: Set.Acquire: units -1 out of range [0, %d]`, int64(semaphore.MaxUnits)), func() { _, _ = s.Acquire(ctx, "k", -1) })
	assert.Panics(t, func() { _, _, _ = s.TryAcquire(ctx, "k", -1) })
	assert.PanicsWithValue(t, fmt.Sprintf(`etcdsem set %q: capacityOf("bad") = -1 out of range [0, %d]`, s.Name(), int64(semaphore.MaxUnits)),
		func() { _, _ = s.Acquire(ctx, "bad", 1) })
	assert.Zero(t, s.Keys(), "a key whose capacity is refused is not kept")
}

func TestSet_AcquireTimeoutOfZeroOrLessOnlyTakesFreeUnits(t *testing.T) {
	ep := sharedEndpoint(t)
	s := newSet(t, newClient(t, ep), testName(t), func(string) int64 { return 1 })
	ctx := testCtx(t, 20*time.Second)
	u, err := s.AcquireTimeout(ctx, "k", 0, 1)
	require.NoError(t, err)
	for _, d := range []time.Duration{0, -time.Second} {
		_, err = s.AcquireTimeout(ctx, "k", d, 1)
		require.ErrorIs(t, err, semaphore.ErrTimedOut)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	}
	_, err = s.AcquireTimeout(ctx, "k", 50*time.Millisecond, 1)
	require.ErrorIs(t, err, semaphore.ErrTimedOut)
	require.NoError(t, u.Release(ctx))
}

// Contention and stress across four Sets (each its own lease and watch, as
// four processes would have), many keys, weights up to each key's capacity,
// callers giving up by timeout, keys leaving memory and coming back all the
// time: the units each key's callers hold never exceed its capacity, and the
// history checker replays every key's history.
func TestSet_ContentionKeepsTheBoundOfEveryKey(t *testing.T) {
	defer func(d time.Duration) { idlePause = d }(idlePause)
	idlePause = 5 * time.Millisecond // keys leave memory between uses
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := func(k string) int64 { return 1 + int64(len(k))%3 }
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	sets := make([]*Set, 4)
	for i := range sets {
		sets[i] = newSet(t, newClient(t, ep), name, capOf, WithClientName(fmt.Sprintf("p%d", i)))
	}
	ctx := testCtx(t, 3*time.Minute)
	keys := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g", "hh"}
	inUse := make(map[string]*atomic.Int64, len(keys))
	for _, k := range keys {
		inUse[k] = new(atomic.Int64)
	}
	var grants, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			s := sets[i%len(sets)]
			for range 15 {
				k := keys[rng.IntN(len(keys))]
				n := 1 + rng.Int64N(capOf(k))
				u, err := s.AcquireTimeout(ctx, k, time.Duration(rng.IntN(300))*time.Millisecond, n)
				if err != nil {
					require.ErrorIs(t, err, semaphore.ErrTimedOut)
					gaveUp.Add(1)
					continue
				}
				log.add(u)
				grants.Add(1)
				if now := inUse[k].Add(n); now > capOf(k) {
					t.Errorf("bound of %q: %d units held, capacity %d", k, now, capOf(k))
				}
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // the critical section
				inUse[k].Add(-n)
				require.NoError(t, u.Release(ctx))
			}
		}()
	}
	wg.Wait()
	t.Logf("%d grants, %d gave up", grants.Load(), gaveUp.Load())
	assert.Positive(t, grants.Load())
	assert.Zero(t, setKeysIn(t, sets[0].sess.cli, name, nil), "no key left in etcd")
	for _, s := range sets {
		if !assert.Eventually(t, func() bool { return s.Keys() == 0 }, 10*time.Second, 5*time.Millisecond, "every key leaves memory") {
			t.Log(s.debugState())
		}
	}
}

// debugState describes the keys in memory, for failing tests.
func (s *Set) debugState() string {
	var b strings.Builder
	for _, k := range s.snapshot() {
		k.h.mu.Lock()
		fmt.Fprintf(&b, "key %q: loaded %v dropped %v rev %d, %d queue keys:", k.h.name, k.loaded, k.dropped, k.h.q.rev, len(k.h.q.keys))
		for _, q := range k.h.q.keys {
			fmt.Fprintf(&b, " %s(n=%d state=%d)", q.key[len(k.h.qprefix):], q.n, q.state)
		}
		for key, r := range k.h.mine {
			fmt.Fprintf(&b, "\n  mine %s: state %d createRev %d", key[len(k.h.qprefix):], r.state, r.createRev)
		}
		b.WriteString("\n")
		k.h.mu.Unlock()
	}
	return b.String()
}

// sweepOnce runs one sweep of s, for tests.
func (s *Set) sweepOnce() { s.sweepIdle() }

func TestSet_AnAcquireAbandonedBeforeItsWriteLeavesNothingBehind(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	px := newProxy(t, ep)
	t.Cleanup(px.release)
	s := newSet(t, newClient(t, px.endpoint()), name, func(string) int64 { return 1 })
	ctx := testCtx(t, 30*time.Second)
	u, err := s.Acquire(ctx, "k", 1) // the lease exists from here on
	require.NoError(t, err)
	require.NoError(t, u.Release(ctx))

	px.hold(true, false) // the write never reaches etcd
	_, err = s.AcquireTimeout(ctx, "k", 300*time.Millisecond, 1)
	require.ErrorIs(t, err, semaphore.ErrTimedOut)
	px.dropConns() // and never will: the bytes held are dropped with the connection
	px.release()

	require.Eventually(t, func() bool { return s.Keys() == 0 }, 10*time.Second, 10*time.Millisecond,
		"the abandoned acquire keeps its key in memory")
	assert.Zero(t, setKeysIn(t, newClient(t, ep), name, nil))
	u, err = s.Acquire(ctx, "k", 1)
	require.NoError(t, err, "the Set works on after its connection was dropped")
	require.NoError(t, u.Release(ctx))
}

func TestSet_AKeyDroppedFromMemoryAppliesNoLateEvent(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	s := newSet(t, newClient(t, ep), name, func(string) int64 { return 1 })
	ctx := testCtx(t, 30*time.Second)
	u, err := s.Acquire(ctx, "x", 1)
	require.NoError(t, err)
	require.NoError(t, u.Release(ctx))
	s.mu.Lock()
	old := s.keys[setKeysOf(s.prefix, "x").prefix]
	s.mu.Unlock()
	require.NotNil(t, old)
	s.sweepOnce()
	s.sweepOnce()
	require.Zero(t, s.Keys())

	// The key again, in a new entry: a holder whose key the watch could
	// have handed to the old entry just before it was dropped.
	u, err = s.Acquire(ctx, "x", 1)
	require.NoError(t, err)
	resp, err := s.sess.cli.Get(ctx, u.req().key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	old.deliver([]*clientv3.Event{{Type: clientv3.EventTypePut, Kv: resp.Kvs[0]}})
	old.h.mu.Lock()
	applied := old.h.q.byKey[u.req().key] != nil
	old.h.mu.Unlock()
	assert.False(t, applied, "a dropped entry applies nothing (it would take the new holder's key for an orphan of its lease, and delete it)")
	require.NoError(t, u.Release(ctx))
}

func TestSet_RangeLimitsOfUnitsAndCapacity(t *testing.T) {
	ep := sharedEndpoint(t)
	name := testName(t)
	capOf := capacities(map[string]int64{"none": 0, "most": semaphore.MaxUnits}, 1)
	log := &grantLog{}
	checkSetHistoryAtEnd(t, ep, name, capOf, log)
	s := newSet(t, newClient(t, ep), name, capOf)
	ctx := testCtx(t, 20*time.Second)

	// A capacity of 0 grants 0 units and refuses one, before any RPC.
	_, err := s.Acquire(ctx, "none", 1)
	require.ErrorIs(t, err, semaphore.ErrTooLarge)
	z, err := s.Acquire(ctx, "none", 0)
	require.NoError(t, err, "0 units fit any capacity")
	log.add(z)
	assert.Zero(t, z.Count())
	// The largest capacity grants all of it, then nothing more at once.
	all, err := s.Acquire(ctx, "most", semaphore.MaxUnits)
	require.NoError(t, err)
	log.add(all)
	assert.Equal(t, int64(semaphore.MaxUnits), all.Count())
	_, ok, err := s.TryAcquire(ctx, "most", 1)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Panics(t, func() { _, _ = s.Acquire(ctx, "most", semaphore.MaxUnits+1) }, "above MaxUnits is a programmer error")
	require.NoError(t, all.Release(ctx))
	require.NoError(t, z.Release(ctx))
	assert.NoError(t, all.Release(ctx), "Release after Release is nil")
}
