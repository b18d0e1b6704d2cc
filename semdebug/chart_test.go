package semdebug

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCharts_ScaleTheHistoryIntoTheViewBox(t *testing.T) {
	now := time.Date(2000, 1, 1, 0, 5, 0, 0, time.UTC)
	history := []point{
		{At: now.Add(-time.Minute), Held: 0, Waiters: 4, HeadWait: 0},
		{At: now.Add(-30 * time.Second), Held: 2, Waiters: 2, HeadWait: 1500 * time.Millisecond},
		{At: now, Held: 4, Waiters: 0, HeadWait: 3 * time.Second},
	}
	cs := charts(history, now)
	require.Len(t, cs, 3)
	inUse := cs[0]
	assert.Equal(t, "chart-inuse", inUse.ID)
	assert.Equal(t, 3, inUse.N)
	assert.Equal(t, "0.0,110.0 300.0,60.0 600.0,10.0", inUse.Points, "a minute across, the top at the largest value")
	assert.Equal(t, "4", inUse.Max)
	assert.Equal(t, "4", inUse.Last)
	assert.Equal(t, "1m0s", inUse.Span)
	assert.Equal(t, "0.0,10.0 300.0,60.0 600.0,110.0", cs[1].Points)
	assert.Equal(t, "3s", cs[2].Max)
	assert.Equal(t, "3s", cs[2].Last)
}

func TestCharts_SpanBetweenAMinuteAndTheWholeHistory(t *testing.T) {
	now := time.Date(2000, 1, 1, 1, 0, 0, 0, time.UTC)
	assert.Equal(t, "1m0s", charts(nil, now)[0].Span)
	assert.Equal(t, "1m0s", charts([]point{{At: now.Add(-10 * time.Second)}}, now)[0].Span)
	assert.Equal(t, "3m0s", charts([]point{{At: now.Add(-3 * time.Minute)}}, now)[0].Span)
	assert.Equal(t, "5m0s", charts([]point{{At: now.Add(-time.Hour)}}, now)[0].Span)
}

func TestCharts_EmptyHistoryDrawsNoLine(t *testing.T) {
	for _, c := range charts(nil, time.Now()) {
		assert.Zero(t, c.N)
		assert.Empty(t, c.Points)
		assert.Empty(t, c.Last)
		assert.Equal(t, "1", c.Max[:1], "a flat axis of one")
	}
}
