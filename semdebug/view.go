package semdebug

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
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

var columns = []column{
	{"name", "name", func(a, b *row) int { return strings.Compare(a.Key, b.Key) }},
	{"kind", "kind", func(a, b *row) int { return strings.Compare(a.Kind, b.Kind) }},
	{"capacity", "capacity", func(a, b *row) int { return cmp.Compare(a.Capacity, b.Capacity) }},
	{"inuse", "in use", func(a, b *row) int { return cmp.Compare(a.InUse, b.InUse) }},
	{"available", "available", func(a, b *row) int { return cmp.Compare(a.Available, b.Available) }},
	{"waiters", "waiters", func(a, b *row) int { return cmp.Compare(a.Waiters, b.Waiters) }},
	{"headwait", "head wait", func(a, b *row) int { return cmp.Compare(a.HeadWait, b.HeadWait) }},
	{"oldest", "oldest holder", func(a, b *row) int { return cmp.Compare(a.OldestHolder, b.OldestHolder) }},
	{"broken", "broken", func(a, b *row) int { return cmpBool(a.Broken, b.Broken) }},
	{"acquired", "acquired/s", func(a, b *row) int { return cmp.Compare(a.Rates.Acquired, b.Rates.Acquired) }},
	{"timedout", "timed out/s", func(a, b *row) int { return cmp.Compare(a.Rates.TimedOut, b.Rates.TimedOut) }},
	{"shed", "shed/s", func(a, b *row) int { return cmp.Compare(a.Rates.Shed, b.Rates.Shed) }},
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
		src := e.load()
		if src == nil {
			continue // collected; its cleanup will remove the entry
		}
		rd := e.obs.read(src, false)
		rows = append(rows, row{ID: e.id, Name: src.Name(), Kind: src.Kind(), reading: rd,
			Stalled: rd.Waiters > 0 && rd.HeadWait > h.threshold})
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

// object reads e's source for its page. The key is computed against every
// registered name, as on the index.
func (h *handler) object(e *entry, src Source) object {
	rd := e.obs.read(src, false)
	page := object{
		row:         row{ID: e.id, Name: src.Name(), Kind: src.Kind(), reading: rd, Stalled: rd.Waiters > 0 && rd.HeadWait > h.threshold},
		Threshold:   h.threshold,
		Refresh:     h.refresh,
		History:     e.obs.historyPoints(),
		Diagnostics: src.Diagnostics(diagnosticsLines),
	}
	var rows []row
	for _, other := range h.reg.list() {
		if other == e {
			rows = append(rows, page.row)
		} else if s := other.load(); s != nil {
			rows = append(rows, row{ID: other.id, Name: s.Name()})
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
