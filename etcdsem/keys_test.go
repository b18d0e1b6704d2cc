package etcdsem

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// nestingPairs are names whose keys collided, or nearly did, under a layout
// that used the name itself as the key prefix: one is the other plus "/q" (the
// queue's own prefix), a "/" or more, or a byte that escapes to what the other
// spells out.
var nestingPairs = [][2]string{
	{"a", "a/b"},
	{"a", "ab"},
	{"a", "a/q"},
	{"a/q", "a/q/x"},
	{"a", "a/q/x"},
	{"a", "a/"},
	{"a/q", "a%2Fq"},
	{"a%", "a%25"},
	{"семафор", "семафор/q"},
	{"日本", "日本/q/日本"},
	{strings.Repeat("long-name/", 400), strings.Repeat("long-name/", 400) + "q"},
	{strings.Repeat("é", 3000), strings.Repeat("é", 3000) + "/q/" + strings.Repeat("é", 3000)},
}

func TestKeys_NoNameIsAPrefixOfAnothersKeys(t *testing.T) {
	for _, p := range nestingPairs {
		a, b := keysOf(p[0]), keysOf(p[1])
		for _, k := range []string{b.capKey, b.brokenKey, b.qprefix + "0000000000000001-1"} {
			assert.False(t, strings.HasPrefix(k, a.prefix), "%q's key %q is under %q's prefix", p[1], k, p[0])
		}
		for _, k := range []string{a.capKey, a.brokenKey, a.qprefix + "0000000000000001-1"} {
			assert.False(t, strings.HasPrefix(k, b.prefix), "%q's key %q is under %q's prefix", p[0], k, p[1])
		}
	}
}

func TestKeys_NamesWithoutSlashOrPercentKeepTheirText(t *testing.T) {
	k := keysOf("jobs")
	assert.Equal(t, "jobs/", k.prefix)
	assert.Equal(t, "jobs/cap", k.capKey)
	assert.Equal(t, "jobs/broken", k.brokenKey)
	assert.Equal(t, "jobs/q/", k.qprefix)
	assert.Equal(t, "jobs/r/00000000000000ff", k.reportKey(255))
	assert.Equal(t, "a%2Fq/", KeyPrefix("a/q"))
	assert.Equal(t, "50%25%2F/", KeyPrefix("50%/"))
}

// FuzzKeys checks the layout's claim for any two names: every key of one
// starts with its own prefix and no key of one starts with the other's prefix.
// It also checks the state's range [prefix, prefix+"r/"): it holds a name's
// capacity, broken and queue keys, none of its reports, and no key of
// another name.
func FuzzKeys(f *testing.F) {
	for _, p := range nestingPairs[:9] {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == "" || b == "" || a == b {
			return
		}
		ka, kb := keysOf(a), keysOf(b)
		for _, x := range []struct {
			own, other keyLayout
		}{{ka, kb}, {kb, ka}} {
			inState := func(l keyLayout, k string) bool { return l.prefix <= k && k < l.rprefix }
			for _, k := range []string{x.own.capKey, x.own.brokenKey, x.own.qprefix, x.own.reportKey(1)} {
				require.True(t, strings.HasPrefix(k, x.own.prefix))
				require.False(t, strings.HasPrefix(k, x.other.prefix), "key %q under prefix %q", k, x.other.prefix)
				require.False(t, inState(x.other, k), "key %q in the state's range of %q", k, x.other.prefix)
			}
			for _, k := range []string{x.own.capKey, x.own.brokenKey, x.own.qprefix + "0000000000000001-1"} {
				require.True(t, inState(x.own, k), "key %q out of its state's range", k)
			}
			require.False(t, inState(x.own, x.own.reportKey(1)), "a report in the state's range")
		}
	})
}

// Each pair of names is used at once: both grant their whole capacity, each
// sees only its own holders and waiters, and a waiter on one is granted by a
// release on that one while the other still holds everything.
func TestNew_NestedNamesAreIndependentSemaphores(t *testing.T) {
	ep := sharedEndpoint(t)
	cli := newClient(t, ep)
	for i, p := range nestingPairs {
		base := testName(t) + "/" + string(rune('a'+i)) + "/"
		names := [2]string{base + p[0], base + p[1]}
		var sems [2]*Semaphore
		logs := [2]*grantLog{{}, {}}
		for j, name := range names {
			sems[j] = newSem(t, cli, name, WithCapacity(2))
		}
		ctx := testCtx(t, 10*time.Second)
		var held [2]*Units
		var wg sync.WaitGroup
		for j := range sems {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, err := sems[j].Acquire(ctx, 2)
				if assert.NoError(t, err, "%q: acquire its whole capacity beside %q", names[j], names[1-j]) {
					logs[j].add(u)
					held[j] = u
				}
			}()
		}
		wg.Wait()
		require.NotNil(t, held[0])
		require.NotNil(t, held[1])
		for j, s := range sems {
			st, err := s.Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(2), st.Capacity, "%q", names[j])
			assert.Equal(t, int64(2), st.Held, "%q", names[j])
			assert.Len(t, st.Holders, 1, "%q sees only its own holder", names[j])
			assert.Empty(t, st.Waiters, "%q sees no waiter", names[j])
		}
		got := make(chan *Units, 1)
		go func() {
			u, err := sems[0].Acquire(ctx, 1)
			assert.NoError(t, err)
			got <- u
		}()
		waitWaiters(t, sems[0], 1)
		assert.Equal(t, 0, waiters(t, sems[1]), "%q does not see %q's waiter", names[1], names[0])
		require.NoError(t, held[0].Release(ctx))
		u := <-got
		require.NotNil(t, u)
		logs[0].add(u)
		require.NoError(t, u.Release(ctx))
		require.NoError(t, held[1].Release(ctx))
		for j, name := range names {
			checkHistory(t, cli, name, logs[j])
		}
	}
}

func TestNew_AnyNonEmptyNameIsValidAndTheEmptyNamePanics(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	ctx := testCtx(t, 10*time.Second)
	assert.PanicsWithValue(t, `etcdsem: New(""): the name must not be empty`, func() { _, _ = New(ctx, cli, "") })
	s := newSem(t, cli, testName(t)+"/x/", WithCapacity(1))
	u, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, u.Release(ctx))
}

// A name is bounded by what etcd accepts in one request, counted as the keys
// hold it: New refuses a name whose escaped form is longer than MaxNameLen,
// before any RPC, with an error matching etcd's own; a name at the bound, in
// plain bytes or in "/" and "%" that escape to three bytes each, is acquired
// and released.
func TestNew_NameBoundIsTheLongestEtcdAccepts(t *testing.T) {
	cli := newClient(t, sharedEndpoint(t))
	// Nine requests of a megabyte and more under the race detector: generous
	// for a machine whose cores are busy.
	ctx := testCtx(t, 3*time.Minute)
	escaped := func(name string) int { return len(KeyPrefix(name)) - 1 }
	// atBound fills base with fill (then "L") up to MaxNameLen escaped bytes.
	atBound := func(base, fill string) string {
		k := (MaxNameLen - escaped(base)) / escaped(fill)
		name := base + strings.Repeat(fill, k)
		name += strings.Repeat("L", MaxNameLen-escaped(name))
		require.Equal(t, MaxNameLen, escaped(name))
		return name
	}
	for _, fill := range []string{"L", "/", "%"} {
		name := atBound(testName(t)+fill+"-", fill)
		s, err := New(ctx, cli, name, WithCapacity(1))
		require.NoError(t, err, "%q at the bound", fill)
		u, err := s.Acquire(ctx, 1)
		require.NoError(t, err, "%q at the bound", fill)
		require.NoError(t, u.Release(ctx))
		require.NoError(t, s.Close())

		for _, past := range []string{name + "L", name[:len(name)-1] + "/", name[:len(name)-1] + "%"} {
			_, err := New(ctx, cli, past, WithCapacity(1))
			require.Error(t, err, "%q: one past the bound", fill)
			assert.ErrorIs(t, err, rpctypes.ErrRequestTooLarge)
			assert.Contains(t, err.Error(), fmt.Sprintf(": new: the name takes %d bytes in its keys, more than MaxNameLen (%d): etcdserver: request is too large", escaped(past), MaxNameLen))
		}
	}
	_, err := New(ctx, cli, strings.Repeat("L", 250<<10), WithCapacity(1))
	assert.ErrorIs(t, err, rpctypes.ErrRequestTooLarge, "a name of 250 KiB")
}

// A tool that watches [KeyPrefix, ReportPrefix) follows the state (capacity,
// broken, queue) and sees no report, whatever the name holds.
func TestReportPrefix_EndsTheStateRange(t *testing.T) {
	for _, name := range []string{"jobs", "a/b", "a%2Fb", "r", "q/r/", strings.Repeat("<b>\n", 1250)} {
		k := keysOf(name)
		start, end := KeyPrefix(name), ReportPrefix(name)
		require.True(t, strings.HasPrefix(end, start), "%q: the reports are under the prefix", name)
		for _, key := range []string{k.capKey, k.brokenKey, k.qprefix + "00000000000000ff-1"} {
			assert.True(t, start <= key && key < end, "%q: %q is in the state's range", name, key)
		}
		assert.False(t, k.reportKey(255) < end, "%q: a report is outside the state's range", name)
	}
}
