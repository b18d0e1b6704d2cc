package otel_test

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/keyed"
	"github.com/fairsem/semaphore/metrics/otel"
)

var uploads = attribute.String("keyed.set.name", "uploads")

func TestKeyedMetrics_ObserveStateCountersAndTheTopKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meter, reader := newMeter(t)
		set := keyed.New(2, keyed.WithName("uploads"), keyed.WithLimit(3), keyed.WithMaxWaiters(1))
		m, err := otel.NewKeyedMetrics(meter, set, 1)
		require.NoError(t, err)
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

		c := collect(t, reader)
		assert.Equal(t, 2.0, c.value(t, "keyed.keys", uploads))
		assert.Equal(t, 3.0, c.value(t, "keyed.limit", uploads))
		assert.Equal(t, 3.0, c.value(t, "keyed.units.held", uploads))
		assert.Equal(t, 1.0, c.value(t, "keyed.pending_requests", uploads))
		assert.Equal(t, 0.0, c.value(t, "keyed.broken", uploads))
		assert.Equal(t, 2.0, c.value(t, "keyed.acquisitions", uploads))
		assert.Equal(t, map[string]float64{"alice": 2}, keyPoints(t, c, "keyed.key.units.held"), "topKeys 1: alice holds the most")
		assert.Equal(t, map[string]float64{"alice": 1}, keyPoints(t, c, "keyed.key.pending_requests"))

		byOutcome := map[semaphore.Outcome]float64{}
		for _, err := range failures {
			o, ok := semaphore.OutcomeOf(err)
			require.True(t, ok, "%v", err)
			byOutcome[o]++
		}
		assert.Equal(t, map[semaphore.Outcome]float64{semaphore.TimedOut: 2, semaphore.Cancelled: 1, semaphore.TooLarge: 1, semaphore.QueueFull: 1}, byOutcome)
		failure := func(kind string) float64 {
			return c.value(t, "keyed.failures", uploads, attribute.String("error.type", kind))
		}
		assert.Equal(t, byOutcome[semaphore.TimedOut], failure("timed_out"))
		assert.Equal(t, byOutcome[semaphore.Cancelled], failure("cancelled"))
		assert.Equal(t, byOutcome[semaphore.TooLarge]+byOutcome[semaphore.QueueFull], failure("rejected"))

		for name, unit := range map[string]string{
			"keyed.keys": "{key}", "keyed.limit": "{unit}", "keyed.units.held": "{unit}", "keyed.pending_requests": "{request}",
			"keyed.broken": "1", "keyed.acquisitions": "{acquisition}", "keyed.failures": "{request}",
			"keyed.key.units.held": "{unit}", "keyed.key.pending_requests": "{request}",
		} {
			assert.Equal(t, unit, c[name].Unit, name)
		}
		assert.True(t, c["keyed.acquisitions"].Data.(metricdata.Sum[int64]).IsMonotonic)
		assert.False(t, c["keyed.units.held"].Data.(metricdata.Sum[int64]).IsMonotonic)

		alice.Release()
		(<-waiting).Release()
		bob.Release()
		assert.Empty(t, keyPoints(t, collect(t, reader), "keyed.key.units.held"), "no key is active")
		require.NoError(t, m.Unregister())
		_, ok := collect(t, reader)["keyed.keys"]
		assert.False(t, ok, "no callback, no state")
	})
}

// keyPoints returns the points of metric name in c by their keyed.key.
func keyPoints(t *testing.T, c map[string]metricdata.Metrics, name string) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	m, ok := c[name]
	if !ok {
		return got
	}
	d, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s: %T", name, m.Data)
	for _, p := range d.DataPoints {
		key, ok := p.Attributes.Value("keyed.key")
		require.True(t, ok, "%s without keyed.key", name)
		got[key.AsString()] = float64(p.Value)
	}
	return got
}

func TestKeyedMetrics_NoLimitWithoutALimit(t *testing.T) {
	meter, reader := newMeter(t)
	_, err := otel.NewKeyedMetrics(meter, keyed.New(2, keyed.WithName("plain")), 10)
	require.NoError(t, err)
	c := collect(t, reader)
	_, ok := c["keyed.limit"]
	assert.False(t, ok, "a set without WithLimit has no limit to report")
	assert.Equal(t, 0.0, c.value(t, "keyed.keys", attribute.String("keyed.set.name", "plain")))
}

func TestKeyedMetrics_TopKeysBoundsThePerKeyMeasurements(t *testing.T) {
	set := keyed.New(10, keyed.WithName("tenants"))
	var held []*keyed.Units
	for i, key := range []string{"a", "b", "c", "d", "e"} {
		u, err := set.Acquire(context.Background(), key, int64(i+1))
		require.NoError(t, err)
		held = append(held, u)
	}
	observed := func(topKeys int) map[string]float64 {
		meter, reader := newMeter(t)
		_, err := otel.NewKeyedMetrics(meter, set, topKeys)
		require.NoError(t, err)
		return keyPoints(t, collect(t, reader), "keyed.key.units.held")
	}
	assert.Empty(t, observed(0), "topKeys 0: no per-key measurements")
	assert.Equal(t, map[string]float64{"e": 5, "d": 4}, observed(2), "the two keys holding the most")
	assert.Len(t, observed(math.MaxInt), 5, "no more than the active keys")

	meter, reader := newMeter(t)
	_, err := otel.NewKeyedMetrics(meter, set, 2)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"e": 5, "d": 4}, keyPoints(t, collect(t, reader), "keyed.key.units.held"))
	held[4].Release() // e leaves; c comes in
	assert.Equal(t, map[string]float64{"d": 4, "c": 3}, keyPoints(t, collect(t, reader), "keyed.key.units.held"),
		"a key that left the top is no longer reported")
	for _, u := range held[:4] {
		u.Release()
	}
}

func TestKeyedMetrics_HostileKeysAreReportedReadably(t *testing.T) {
	meter, reader := newMeter(t)
	set := keyed.New(10, keyed.WithName("hostile\xff"))
	long := strings.Repeat("k", 5000)
	keys := []string{long, "<b>markup</b>", "new\nline", "bad\xff", "bad\xfe", `quote"\`}
	var held []*keyed.Units
	for i, key := range keys {
		u, err := set.Acquire(context.Background(), key, int64(len(keys)-i))
		require.NoError(t, err)
		held = append(held, u)
	}
	_, err := otel.NewKeyedMetrics(meter, set, 10)
	require.NoError(t, err)
	c := collect(t, reader)
	assert.Equal(t, 6.0, c.value(t, "keyed.keys", attribute.String("keyed.set.name", "hostile\uFFFD")))
	assert.Equal(t, map[string]float64{long: 6, "<b>markup</b>": 5, "new\nline": 4, "bad\uFFFD": 3, `quote"\`: 1},
		keyPoints(t, c, "keyed.key.units.held"), "valid UTF-8; of the two keys read alike, the one holding more")
	for _, u := range held {
		u.Release()
	}
}

func TestKeyedMetrics_BrokenState(t *testing.T) {
	meter, reader := newMeter(t)
	set := keyed.New(1, keyed.WithName("uploads"))
	_, err := otel.NewKeyedMetrics(meter, set, 0)
	require.NoError(t, err)
	set.Break(errors.New("down"))
	assert.Equal(t, 1.0, collect(t, reader).value(t, "keyed.broken", uploads))
}

func TestNewKeyedMetrics_InvalidArgumentsPanic(t *testing.T) {
	meter, _ := newMeter(t)
	requirePanic(t, "otel: NewKeyedMetrics(nil)", func() { _, _ = otel.NewKeyedMetrics(meter, nil, 0) })
	requirePanic(t, `otel: NewKeyedMetrics: set "uploads": topKeys -1 is negative`, func() {
		_, _ = otel.NewKeyedMetrics(meter, keyed.New(1, keyed.WithName("uploads")), -1)
	})
	requirePanic(t, "keyed: zero Set", func() { _, _ = otel.NewKeyedMetrics(meter, &keyed.Set{}, 0) })
}

func TestKeyedMetrics_CollectionsWhileCallsRunStayWithinBounds(t *testing.T) {
	meter, reader := newMeter(t)
	set := keyed.New(2, keyed.WithName("busy"), keyed.WithLimit(5))
	_, err := otel.NewKeyedMetrics(meter, set, 3)
	require.NoError(t, err)
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
	busy := attribute.String("keyed.set.name", "busy")
	for {
		c := collect(t, reader)
		held := keyPoints(t, c, "keyed.key.units.held")
		assert.LessOrEqual(t, len(held), 3, "at most topKeys keys")
		for key, n := range held {
			assert.LessOrEqual(t, n, 2.0, "%s holds at most its capacity", key)
		}
		select {
		case <-done:
			c := collect(t, reader)
			assert.Equal(t, float64(acquired.Load()), c.value(t, "keyed.acquisitions", busy))
			assert.Equal(t, 0.0, c.value(t, "keyed.units.held", busy))
			assert.Equal(t, 0.0, c.value(t, "keyed.keys", busy))
			return
		default:
		}
	}
}
