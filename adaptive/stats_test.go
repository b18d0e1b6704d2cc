package adaptive_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/adaptive"
	"github.com/fairsem/semaphore/internal/statsline/statslinetest"
)

// Stats print with %v as one line in the words of the metrics and Diagnostics.
func TestStats_PrintsAsOneLineInTheMetricsWords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := adaptive.New(semaphore.New(3), &script{limit: 3, limits: []int{4}}, adaptive.WithName("backend"), adaptive.WithWindow(1, 0, 0))
		assert.Equal(t, `adaptive limiter "backend" limit=3 capacity_estimate=unknown in_flight=0 available=3 waiters=0 acquired=0 succeeded=0 dropped=0 ignored=0 shed=0 shed_at_once=0 windows=0 increases=0 decreases=0 last_change=never levels=critical{in_flight=0,waiting=0,acquired=0,shed=0,shed_at_once=0},default{in_flight=0,waiting=0,acquired=0,shed=0,shed_at_once=0},sheddable{in_flight=0,waiting=0,acquired=0,shed=0,shed_at_once=0}`,
			fmt.Sprint(l.Stats()))
		a, err := l.Acquire(context.Background())
		require.NoError(t, err)
		b, err := l.Acquire(context.Background())
		require.NoError(t, err)
		time.Sleep(1500 * time.Millisecond)
		a.Done(adaptive.Success) // a window of one sample: limit 4
		assert.Equal(t, `adaptive limiter "backend" limit=4 capacity_estimate=unknown in_flight=1 available=3 waiters=0 acquired=2 succeeded=1 dropped=0 ignored=0 shed=0 shed_at_once=0 windows=1 increases=1 decreases=0 last_change=2000-01-01T00:00:01.500Z `+
			`levels=critical{in_flight=0,waiting=0,acquired=0,shed=0,shed_at_once=0},default{in_flight=1,waiting=0,acquired=2,shed=0,shed_at_once=0},sheddable{in_flight=0,waiting=0,acquired=0,shed=0,shed_at_once=0}`,
			l.Stats().String())
		b.Release()
	})
}

func TestStats_StringWritesTheEstimateWhenKnown(t *testing.T) {
	st := adaptive.Stats{Limit: 19, Estimate: 13}
	assert.Contains(t, st.String(), "unnamed adaptive limiter limit=19 capacity_estimate=13 in_flight=0 ")
}

func TestStats_StringNamesEveryField(t *testing.T) {
	st := adaptive.Stats{Name: "n", Limit: 1, Estimate: 1, InFlight: 1, Available: 1, Waiters: 1, Acquired: 1, Succeeded: 1, Dropped: 1,
		Ignored: 1, Shed: 1, ShedAtOnce: 1, Windows: 1, Increases: 1, Decreases: 1, LastChange: time.Unix(1, 0)}
	statslinetest.EveryField(t, st, st.String(), map[string]string{"Estimate": "capacity_estimate"})
}

func TestStats_StringQuotesHostileNames(t *testing.T) {
	for _, name := range []string{"a\nb", `<b>"x" limit=999</b>`, strings.Repeat("x", 5000), "\xff"} {
		got := adaptive.Stats{Name: name}.String()
		assert.True(t, strings.HasPrefix(got, "adaptive limiter "+strconv.Quote(name)+" limit=0 "), got)
		assert.NotContains(t, got, "\n")
	}
}

// Each level's part prints in its own braces, most critical first, in units.
func TestStats_StringWritesEachLevel(t *testing.T) {
	l := adaptive.New(semaphore.New(4, semaphore.WithName("db")), &script{limit: 4})
	c, err := l.AcquireN(adaptive.ContextWithPriority(context.Background(), adaptive.Critical), 2)
	require.NoError(t, err)
	defer c.Release()
	assert.Contains(t, l.Stats().String(), ` levels=critical{in_flight=2,waiting=0,acquired=1,shed=0,shed_at_once=0},`+
		`default{in_flight=0,waiting=0,acquired=0,shed=0,shed_at_once=0},sheddable{in_flight=0,waiting=0,acquired=0,shed=0,shed_at_once=0}`)
}
