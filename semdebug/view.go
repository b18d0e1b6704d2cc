package semdebug

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairsem/semaphore"
)

// row is one object as the index shows it: one reading, taken once, that every
// rendering (HTML, JSON, text) formats.
type row struct {
	ID      uint64
	Key     string // unique on the page; see pageKeys
	Name    string
	Kind    string
	Stalled bool
	reading
}

// index is the index page's data.
type index struct {
	At        time.Time
	Threshold time.Duration
	Refresh   time.Duration
	Sort      string
	Desc      bool
	Rows      []*row
	Stalled   int
}

// column is a sortable column of the index.
type column struct {
	Key   string // the ?sort= value
	Title string
	cmp   func(a, b *row) int
}

// The columns of the index: the reading's state, then the rates of the counters
// the index shows, whose names and meanings are the core's (semaphore.Reading). An unknown number sorts below every known one, and no limit above
// every capacity.
var columns = append([]column{
	{"name", "name", func(a, b *row) int { return strings.Compare(a.Key, b.Key) }},
	{"kind", "kind", func(a, b *row) int { return strings.Compare(a.Kind, b.Kind) }},
	{"capacity", "capacity", func(a, b *row) int { return cmp.Compare(a.capacityKey(a.Capacity), b.capacityKey(b.Capacity)) }},
	{"inuse", "in use", func(a, b *row) int {
		return cmp.Compare(a.key(semaphore.HeldField, a.Held), b.key(semaphore.HeldField, b.Held))
	}},
	{"available", "available", func(a, b *row) int { return cmp.Compare(a.capacityKey(a.Available), b.capacityKey(b.Available)) }},
	{"waiters", "waiters", func(a, b *row) int {
		return cmp.Compare(a.key(semaphore.WaitersField, int64(a.Waiters)), b.key(semaphore.WaitersField, int64(b.Waiters)))
	}},
	{"headwait", "head wait", func(a, b *row) int { return cmp.Compare(a.HeadWait, b.HeadWait) }},
	{"oldest", "oldest holder", func(a, b *row) int { return cmp.Compare(a.OldestHolder, b.OldestHolder) }},
	{"broken", "broken", func(a, b *row) int { return cmpBool(a.Broken, b.Broken) }},
}, rateColumns()...)

func rateColumns() []column {
	var cols []column
	for _, c := range counters {
		if c.onIndex {
			cols = append(cols, column{c.key, c.title + "/s", rateColumn(c)})
		}
	}
	return cols
}

// appendCells appends the index's columns after name and kind, formatted for
// the HTML and text forms, to dst.
func (r *row) appendCells(dst []string) []string {
	dst = append(dst, r.CapacityText(), r.HeldText(), r.AvailableText(), r.WaitersText(),
		r.HeadWaitText(), ageText(r.OldestHolder), r.BrokenYesNo())
	for _, c := range counters {
		if c.onIndex {
			dst = append(dst, r.rateText(c))
		}
	}
	return dst
}

// counter is one of a Reading's counters as the pages show it.
type counter struct {
	key, title string
	field      semaphore.Fields
	total      func(*semaphore.Reading) uint64
	rate       func(*rates) float64 // nil: the page shows no rate of it
	onIndex    bool                 // the index has a column of its rate
}

// counters lists the counters in the order the pages show them.
var counters = []counter{
	{"acquired", "acquired", semaphore.AcquiredField, func(s *semaphore.Reading) uint64 { return s.Acquired }, func(r *rates) float64 { return r.Acquired }, true},
	{"queued", "queued", semaphore.QueuedField, func(s *semaphore.Reading) uint64 { return s.Queued }, nil, false},
	{"timedout", "timed out", semaphore.TimedOutField, func(s *semaphore.Reading) uint64 { return s.TimedOut }, func(r *rates) float64 { return r.TimedOut }, true},
	{"cancelled", "cancelled", semaphore.CancelledField, func(s *semaphore.Reading) uint64 { return s.Cancelled }, func(r *rates) float64 { return r.Cancelled }, false},
	{"rejected", "rejected", semaphore.RejectedField, func(s *semaphore.Reading) uint64 { return s.Rejected }, func(r *rates) float64 { return r.Rejected }, true},
	{"shed", "shed", semaphore.ShedField, func(s *semaphore.Reading) uint64 { return s.Shed }, func(r *rates) float64 { return r.Shed }, true},
}

// Charted reports whether the page charts the object: not when it knows
// neither its units held nor its waiters.
func (r *reading) Charted() bool {
	const both = semaphore.HeldField | semaphore.WaitersField
	return r.Unknown&both != both
}

// counterValue is one counter of one reading, formatted.
type counterValue struct {
	Key, Title  string
	Total, Rate string // "-" when unknown; Rate "" when the page shows no rate
}

// Counters formats the reading's counters.
func (r *reading) Counters() []counterValue {
	out := make([]counterValue, len(counters))
	for i, c := range counters {
		out[i] = counterValue{Key: c.key, Title: c.title, Total: r.total(c)}
		if c.rate != nil {
			out[i].Rate = r.rateText(c)
		}
	}
	return out
}

// key is v as the index sorts it: -1 when f is unknown.
func (r *row) key(f semaphore.Fields, v int64) int64 {
	if r.Unknown&f != 0 {
		return -1
	}
	return v
}

// capacityKey is the capacity or availability v as the index sorts it.
func (r *row) capacityKey(v int64) int64 {
	if r.Unlimited {
		return math.MaxInt64
	}
	return r.key(semaphore.CapacityField, v)
}

func rateColumn(c counter) func(a, b *row) int {
	key := func(r *row) float64 {
		if !r.Rates.Known || r.Unknown&c.field != 0 {
			return -1
		}
		return c.rate(&r.Rates)
	}
	return func(a, b *row) int { return cmp.Compare(key(a), key(b)) }
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// index reads every registered object once and sorts the rows: stalled ones
// first, then by the column sortBy (name when unknown), then by id.
func (h *handler) index(sortBy string, desc bool) index {
	idx := index{Threshold: h.threshold, Refresh: h.refresh, Sort: "name", Desc: desc}
	byCol := columns[0].cmp
	for _, c := range columns {
		if c.Key == sortBy {
			idx.Sort, byCol = c.Key, c.cmp
		}
	}
	entries := h.reg.list()
	rows := make([]row, 0, len(entries))
	for _, e := range entries {
		l := e.load()
		if l == nil {
			continue // collected; its cleanup will remove the entry
		}
		rows = append(rows, h.row(e, e.obs.read(l, false)))
	}
	idx.At = time.Now()
	keys := pageKeys(rows)
	idx.Rows = make([]*row, len(rows))
	for i := range rows {
		rows[i].Key = keys[i]
		idx.Rows[i] = &rows[i]
		if rows[i].Stalled {
			idx.Stalled++
		}
	}
	slices.SortFunc(idx.Rows, func(a, b *row) int {
		if c := cmpBool(b.Stalled, a.Stalled); c != 0 {
			return c
		}
		c := byCol(a, b)
		if desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.ID, b.ID))
	})
	return idx
}

// pageKeys names each row uniquely: by its name when no other row has that name
// and it holds no '#', else as name#id. A name#id key cannot equal another row's
// key: a plain key holds no '#', and name#id gives back its id (after the last
// '#'), which no other row has.
func pageKeys(rows []row) []string {
	count := make(map[string]int, len(rows))
	for i := range rows {
		count[rows[i].Name]++
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		if r.Name != "" && count[r.Name] == 1 && !strings.Contains(r.Name, "#") {
			keys[i] = r.Name
		} else {
			keys[i] = r.Name + "#" + strconv.FormatUint(r.ID, 10)
		}
	}
	return keys
}

// object is an object's page data.
type object struct {
	row
	Threshold   time.Duration
	Refresh     time.Duration
	History     []point
	Diagnostics string
}

// row is e's row of the index, from its reading rd.
func (h *handler) row(e *entry, rd reading) row {
	kind := rd.Kind
	if kind == "" {
		kind = e.typeName
	}
	return row{ID: e.id, Name: rd.Name, Kind: kind, reading: rd, Stalled: rd.Waiters > 0 && rd.HeadWait > h.threshold}
}

// object reads l, e's object, for its page. The key is computed against every
// registered name, as on the index: the names of the objects read before, and
// of the others read now.
func (h *handler) object(e *entry, l Limiter) object {
	page := object{
		row:         h.row(e, e.obs.read(l, false)),
		Threshold:   h.threshold,
		Refresh:     h.refresh,
		History:     e.obs.historyPoints(),
		Diagnostics: l.Diagnostics(diagnosticsLines),
	}
	var rows []row
	for _, other := range h.reg.list() {
		if other == e {
			rows = append(rows, page.row)
		} else if ol := other.load(); ol != nil {
			rows = append(rows, row{ID: other.id, Name: other.obs.nameOf(ol)})
		}
	}
	keys := pageKeys(rows)
	for i := range rows {
		if rows[i].ID == e.id {
			page.Key = keys[i]
		}
	}
	return page
}
