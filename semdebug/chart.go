package semdebug

import (
	"strconv"
	"strings"
	"time"
)

// A chart is one server-rendered SVG line chart of the history: no script and no
// external asset draws it.
type chart struct {
	ID     string // the element id, for tests and styling
	Title  string
	N      int    // samples drawn
	Max    string // the top of the y axis, formatted
	Last   string // the newest value, formatted
	Points string // the polyline's points, in the viewBox's coordinates
	Span   string // how far back the x axis goes
}

// The chart's viewBox: the plot fills chartW x chartH below a margin of chartTop.
const (
	chartW   = 600
	chartH   = 100
	chartTop = 10
)

// charts draws the three charts of an object's page from its history, on one time
// axis ending at now: as long as the history, but at least a minute (so that a
// fresh history does not fill the width with a few samples) and at most the
// historyLen samples the history keeps.
func charts(history []point, now time.Time) []chart {
	span := time.Minute
	if len(history) > 0 {
		span = max(span, now.Sub(history[0].At).Round(time.Minute))
	}
	span = min(span, time.Duration(historyLen)*sampleEvery)
	x := func(t time.Time) float64 {
		return chartW * (1 - float64(now.Sub(t))/float64(span))
	}
	mk := func(id, title string, value func(point) float64, format func(float64) string) chart {
		c := chart{ID: id, Title: title, N: len(history), Span: span.String()}
		top := 1.0
		for _, p := range history {
			top = max(top, value(p))
		}
		var b strings.Builder
		for i, p := range history {
			if i > 0 {
				b.WriteByte(' ')
			}
			y := chartTop + chartH*(1-value(p)/top)
			b.WriteString(strconv.FormatFloat(max(x(p.At), 0), 'f', 1, 64))
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
		}
		c.Points, c.Max = b.String(), format(top)
		if len(history) > 0 {
			c.Last = format(value(history[len(history)-1]))
		}
		return c
	}
	count := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []chart{
		mk("chart-inuse", "units in use", func(p point) float64 { return float64(p.Held) }, count),
		mk("chart-waiters", "waiters", func(p point) float64 { return float64(p.Waiters) }, count),
		mk("chart-headwait", "head waiter's wait", func(p point) float64 { return p.HeadWait.Seconds() },
			func(v float64) string { return roundDuration(time.Duration(v * float64(time.Second))).String() }),
	}
}
