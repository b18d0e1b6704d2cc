package prom_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
	"github.com/fairsem/semaphore/metrics/prom"
)

const keyedMetrics = `
# HELP keyed_acquired_total Successful acquisitions, waited for or not (TryAcquire included).
# TYPE keyed_acquired_total counter
keyed_acquired_total{set="uploads"} 2
# HELP keyed_broken 1 once the set is broken, else 0.
# TYPE keyed_broken gauge
keyed_broken{set="uploads"} 0
# HELP keyed_cancelled_total Calls whose context was cancelled (a deadline counts as timed out).
# TYPE keyed_cancelled_total counter
keyed_cancelled_total{set="uploads"} 1
# HELP keyed_held_units Units held now, summed over keys.
# TYPE keyed_held_units gauge
keyed_held_units{set="uploads"} 3
# HELP keyed_key_held_units Units held now by one of the keys holding the most.
# TYPE keyed_key_held_units gauge
keyed_key_held_units{key="alice",set="uploads"} 2
# HELP keyed_key_waiters Calls waiting now on one of the keys holding the most.
# TYPE keyed_key_waiters gauge
keyed_key_waiters{key="alice",set="uploads"} 1
# HELP keyed_keys Keys active now: with holders or calls in progress.
# TYPE keyed_keys gauge
keyed_keys{set="uploads"} 2
# HELP keyed_limit_units The set's limit on the units held by all keys together (WithLimit); only for a set with one.
# TYPE keyed_limit_units gauge
keyed_limit_units{set="uploads"} 3
# HELP keyed_rejected_total Calls refused: a queue full, or larger than the key's capacity, the limit or the global capacity.
# TYPE keyed_rejected_total counter
keyed_rejected_total{set="uploads"} 2
# HELP keyed_timed_out_total Calls that failed on a deadline: AcquireTimeout's or the context's.
# TYPE keyed_timed_out_total counter
keyed_timed_out_total{set="uploads"} 2
# HELP keyed_waiters Calls waiting now, for their key's units or the global level's.
# TYPE keyed_waiters gauge
keyed_waiters{set="uploads"} 1
`

func TestKeyedCollector_ExportsStateCountersAndTheTopKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set := keyed.New(2, keyed.WithName("uploads"), keyed.WithLimit(3), keyed.WithMaxWaiters(1))
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(prom.NewKeyedCollector(set, 1)))
		var failures []error

		alice, err := set.Acquire(context.Background(), "alice", 2)
		require.NoError(t, err)
		bob, err := set.Acquire(context.Background(), "bob", 1)
		require.NoError(t, err) // the limit's 3 units are held
		_, err = set.AcquireTimeout(time.Second, "bob", 1)
		failures = append(failures, err) // waited at the limit
		deadline, stop := context.WithTimeout(context.Background(), time.Second)
		_, err = set.Acquire(deadline, "dave", 1)
		stop()
		failures = append(failures, err) // a context's deadline is a timeout too
		ctx, cancel := context.WithCancel(context.Background())
		cancelled := make(chan error)
		go func() {
			_, err := set.Acquire(ctx, "carol", 1)
			cancelled <- err
		}()
		synctest.Wait()
		cancel()
		failures = append(failures, <-cancelled)
		_, err = set.Acquire(context.Background(), "alice", 3)
		failures = append(failures, err) // above alice's capacity
		waiting := make(chan *keyed.Units)
		go func() {
			u, err := set.Acquire(context.Background(), "alice", 1)
			assert.NoError(t, err)
			waiting <- u
		}()
		synctest.Wait()
		_, err = set.Acquire(context.Background(), "alice", 1)
		failures = append(failures, err) // alice's one waiter is there

		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(keyedMetrics)))
		byOutcome := map[semaphore.Outcome]float64{}
		for _, err := range failures {
			o, ok := semaphore.OutcomeOf(err)
			require.True(t, ok, "%v", err)
			byOutcome[o]++
		}
		assert.Equal(t, map[semaphore.Outcome]float64{semaphore.TimedOut: 2, semaphore.Cancelled: 1, semaphore.TooLarge: 1, semaphore.QueueFull: 1}, byOutcome)
		assert.Equal(t, byOutcome[semaphore.TimedOut], gathered(t, reg, "keyed_timed_out_total"))
		assert.Equal(t, byOutcome[semaphore.Cancelled], gathered(t, reg, "keyed_cancelled_total"))
		assert.Equal(t, byOutcome[semaphore.TooLarge]+byOutcome[semaphore.QueueFull], gathered(t, reg, "keyed_rejected_total"))

		alice.Release()
		(<-waiting).Release()
		bob.Release()
		assert.Equal(t, 0, testutil.CollectAndCount(prom.NewKeyedCollector(set, 1), "keyed_key_held_units"),
			"no key is active")
	})
}

// gathered returns the value of the one series of family in reg.
func gathered(t *testing.T, reg prometheus.Gatherer, family string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == family {
			require.Len(t, f.GetMetric(), 1, family)
			m := f.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	require.Failf(t, "no family", "%s", family)
	return 0
}

func TestKeyedCollector_NoLimitSeriesWithoutALimit(t *testing.T) {
	set := keyed.New(2, keyed.WithName("plain"))
	c := prom.NewKeyedCollector(set, 10)
	assert.Equal(t, 0, testutil.CollectAndCount(c, "keyed_limit_units"))
	assert.Equal(t, 1, testutil.CollectAndCount(c, "keyed_keys"))
}

func TestKeyedCollector_TopKeysBoundsThePerKeySeries(t *testing.T) {
	set := keyed.New(10, keyed.WithName("tenants"))
	var held []*keyed.Units
	for i, key := range []string{"a", "b", "c", "d", "e"} {
		u, err := set.Acquire(context.Background(), key, int64(i+1))
		require.NoError(t, err)
		held = append(held, u)
	}
	assert.Equal(t, 0, testutil.CollectAndCount(prom.NewKeyedCollector(set, 0), "keyed_key_held_units", "keyed_key_waiters"),
		"topKeys 0: no per-key series")
	require.NoError(t, testutil.CollectAndCompare(prom.NewKeyedCollector(set, 2), strings.NewReader(`
# HELP keyed_key_held_units Units held now by one of the keys holding the most.
# TYPE keyed_key_held_units gauge
keyed_key_held_units{key="d",set="tenants"} 4
keyed_key_held_units{key="e",set="tenants"} 5
`), "keyed_key_held_units"), "the two keys holding the most")
	assert.Equal(t, 5, testutil.CollectAndCount(prom.NewKeyedCollector(set, math.MaxInt), "keyed_key_held_units"),
		"no more series than active keys")

	held[4].Release() // e leaves; c comes in
	require.NoError(t, testutil.CollectAndCompare(prom.NewKeyedCollector(set, 2), strings.NewReader(`
# HELP keyed_key_held_units Units held now by one of the keys holding the most.
# TYPE keyed_key_held_units gauge
keyed_key_held_units{key="c",set="tenants"} 3
keyed_key_held_units{key="d",set="tenants"} 4
`), "keyed_key_held_units"))
	for _, u := range held[:4] {
		u.Release()
	}
}

func TestKeyedCollector_HostileKeysKeepTheScrapeValid(t *testing.T) {
	set := keyed.New(10, keyed.WithName("hostile\xff"))
	long := strings.Repeat("k", 5000)
	keys := []string{long, "<b>markup</b>", "new\nline", "bad\xff", "bad\xfe", `quote"\`}
	var held []*keyed.Units
	for i, key := range keys {
		u, err := set.Acquire(context.Background(), key, int64(len(keys)-i))
		require.NoError(t, err)
		held = append(held, u)
	}
	c := prom.NewKeyedCollector(set, 10)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err, "invalid UTF-8 or keys that read alike must not fail the scrape")
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "keyed_key_held_units" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "key":
					got[l.GetValue()] = m.GetGauge().GetValue()
				case "set":
					assert.Equal(t, "hostile\uFFFD", l.GetValue())
				}
			}
		}
	}
	assert.Equal(t, map[string]float64{long: 6, "<b>markup</b>": 5, "new\nline": 4, "bad\uFFFD": 3, `quote"\`: 1}, got,
		"of the two keys read alike, the one holding more")
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
	for _, u := range held {
		u.Release()
	}
}

func TestKeyedCollector_BrokenGauge(t *testing.T) {
	set := keyed.New(1, keyed.WithName("uploads"))
	c := prom.NewKeyedCollector(set, 0)
	set.Break(errors.New("down"))
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP keyed_broken 1 once the set is broken, else 0.
# TYPE keyed_broken gauge
keyed_broken{set="uploads"} 1
`), "keyed_broken"))
}

func TestNewKeyedCollector_InvalidArgumentsPanic(t *testing.T) {
	requirePanic(t, "prom: NewKeyedCollector(nil)", func() { prom.NewKeyedCollector(nil, 0) })
	requirePanic(t, `prom: NewKeyedCollector: set "uploads": topKeys -1 is negative`, func() {
		prom.NewKeyedCollector(keyed.New(1, keyed.WithName("uploads")), -1)
	})
	requirePanic(t, "keyed: zero Set", func() { prom.NewKeyedCollector(&keyed.Set{}, 0) })
}

func TestKeyedCollector_ScrapesWhileCallsRunStayWithinBounds(t *testing.T) {
	set := keyed.New(2, keyed.WithName("busy"), keyed.WithLimit(5))
	c := prom.NewKeyedCollector(set, 3)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	const workers, rounds = 8, 200
	var acquired atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key := fmt.Sprint("tenant-", w%4)
			for range rounds {
				u, err := set.Acquire(context.Background(), key, 1)
				if !assert.NoError(t, err) {
					return
				}
				acquired.Add(1)
				u.Release()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for scrapes := 0; ; scrapes++ {
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "keyed_key_held_units" {
				assert.LessOrEqual(t, len(f.GetMetric()), 3, "at most topKeys keys")
				for _, m := range f.GetMetric() {
					assert.LessOrEqual(t, m.GetGauge().GetValue(), 2.0, "a key holds at most its capacity")
				}
			}
		}
		select {
		case <-done:
			assert.Equal(t, float64(acquired.Load()), gathered(t, reg, "keyed_acquired_total"))
			assert.Equal(t, 0.0, gathered(t, reg, "keyed_held_units"))
			assert.Equal(t, 0.0, gathered(t, reg, "keyed_keys"))
			return
		default:
		}
	}
}
