package semdebug

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The HTML pages are html/template templates: every value, names first, is
// escaped for the context it lands in, so a hostile name cannot inject markup.
// Their style and their one script (the auto-refresh, which replaces the page's
// content in place and can be paused) are files the handler serves itself (see
// assets.go), so that the pages need nothing inline and no other origin.

var funcs = template.FuncMap{
	"age":     ageText,
	"millis":  func(d time.Duration) int64 { return d.Milliseconds() },
	"charts":  charts,
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"inc":     func(i int) int { return i + 1 },
}

const header = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{block "title" .}}{{end}}</title>
<link rel="stylesheet" href="` + styleFile + `"></head>
<body data-refresh-ms="{{millis .Refresh}}" data-refreshes="0">
<header><h1>{{template "title" .}}</h1>
<button id="pause" type="button" hidden>pause auto-refresh</button>
<a href="">reload</a> <a href="?format=json">json</a> <a href="?format=text">text</a></header>
`

const footer = `<script src="` + scriptFile + `"></script>
</body></html>
`

var indexTemplate = template.Must(template.New("index").Funcs(funcs).Parse(header + `{{define "title"}}semaphores{{end}}
<main id="content">
<p class="summary">{{len .Rows}} objects, <span id="stalled-count">{{.Stalled}}</span> stalled
(head waiting over {{.Threshold}}); read at <span id="read-at">{{rfc3339 .At}}</span>.
Rates are since the previous reading. A head wait marked &gt;= is a lower bound: no waiter has left the list since the page saw the head there.</p>
<table id="index">
<thead><tr>{{range .Columns}}<th class="{{.Key}}"><a href="{{.Href}}">{{.Title}}{{.Arrow}}</a></th>{{end}}</tr></thead>
<tbody>
{{range .Shown}}<tr id="row-{{.ID}}" data-key="{{.Key}}" data-stalled="{{.Stalled}}"{{if .Stalled}} class="stalled"{{end}}>
<td class="name" title="{{.Key}}">{{if .Stalled}}<span class="badge">STALLED</span> {{end}}<a href="{{.ID}}">{{.ShortKey}}</a></td>
<td class="kind" title="{{.Kind}}">{{.ShortKind}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{if .Hidden}}<p id="hidden">{{.Hidden}} more rows not shown: <a href="{{.AllHref}}">show all</a> or ask for ?format=text or ?format=json.</p>{{end}}
</main>
` + footer))

var objectTemplate = template.Must(template.New("object").Funcs(funcs).Parse(header + `{{define "title"}}{{.Kind}} {{.Key}}{{end}}
<main id="content">
<p><a href="./">all semaphores</a> &middot; id {{.ID}} &middot; read at <span id="read-at">{{rfc3339 .At}}</span>
{{if .Stalled}}&middot; <span class="badge" id="stalled">STALLED</span> head waiting over {{.Threshold}}{{end}}</p>
<table id="facts">
<tr><th class="text">capacity</th><td id="capacity">{{.CapacityText}}</td></tr>
<tr><th class="text">in use</th><td id="inuse">{{.HeldText}}</td></tr>
<tr><th class="text">available</th><td id="available">{{.AvailableText}}</td></tr>
<tr><th class="text">waiters</th><td id="waiters">{{.WaitersText}}</td></tr>
<tr><th class="text">head wait</th><td id="headwait">{{.HeadWaitText}}</td></tr>
<tr><th class="text">oldest holder</th><td id="oldest">{{age .OldestHolder}}</td></tr>
<tr><th class="text">broken</th><td class="text" id="broken">{{.BrokenText}}</td></tr>
</table>
<table id="counters"><tr><th class="text">calls</th><th>total</th><th>per second</th></tr>
{{range .Counters}}<tr id="counter-{{.Key}}"><th class="text">{{.Title}}</th><td>{{.Total}}</td><td>{{.Rate}}</td></tr>
{{end}}</table>
{{if .Charted}}<h2>Last {{with index (charts .History .At) 0}}{{.Span}}{{end}}</h2>
<p class="muted">Sampled every second while this page is open, or while Record runs; <span id="samples">{{len .History}}</span> samples.</p>
{{range charts .History .At}}<figure><figcaption>{{.Title}}{{if .N}}: now {{.Last}}, top {{.Max}}{{end}}</figcaption>
<svg class="chart" id="{{.ID}}" data-points="{{.N}}" viewBox="0 0 600 130" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{{.Title}}">
<line x1="0" y1="110" x2="600" y2="110"/><line x1="0" y1="10" x2="600" y2="10" stroke-dasharray="4 4"/>
<text x="2" y="8">{{.Max}}</text><text x="2" y="124">-{{.Span}}</text><text x="575" y="124">now</text>
{{if .N}}<polyline points="{{.Points}}"/>{{else}}<text x="200" y="60">no samples yet</text>{{end}}
</svg></figure>
{{end}}{{end}}
{{if .Holders}}<h2>Holders</h2>
<table id="holders"><tr><th>holders</th><th>units</th><th>oldest</th><th class="name">site</th><th class="name">label</th></tr>
{{range .Holders}}<tr><td>{{.Holders}}</td><td>{{.Units}}</td><td>{{age .Age}}</td><td class="text">{{.Site}}</td><td class="text">{{.Label}}</td></tr>
{{end}}</table>{{end}}
{{if .Waiting}}<h2>Waiters</h2>
<table id="waitlist"><tr><th>position</th><th>units</th><th>waited</th></tr>
{{range $i, $w := .Waiting}}<tr><td>{{inc $i}}</td><td>{{$w.Units}}</td><td>{{age $w.Waited}}</td></tr>
{{end}}</table>{{end}}
{{if .Details}}<h2>Details</h2><table id="details">
{{range .Details}}<tr><th class="text">{{.Name}}</th><td class="text">{{.Value}}</td></tr>
{{end}}</table>{{end}}
<h2>Diagnostics</h2>
<pre id="diagnostics">{{.Diagnostics}}</pre>
</main>
` + footer))

// writeHTML renders into a buffer first, so that a template error gives a clean
// 500 rather than half a page.
func (h *handler) writeHTML(w http.ResponseWriter, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		http.Error(w, "semdebug: rendering failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes()) // an error means the client went away: nobody to tell
}

// indexPage is the index as the HTML template takes it: the rows it shows, each
// formatted beforehand into a flat struct of strings, because the template's
// reflection on nested fields and function calls dominates the cost of a large
// index.
type indexPage struct {
	index
	Columns []htmlColumn
	Shown   []htmlRow
	Hidden  int    // rows not shown
	AllHref string // the same index with every row
}

// htmlColumn is a header cell of the index: its link sorts by it, or reverses
// the order when the index is already sorted by it.
type htmlColumn struct {
	Key, Title, Href, Arrow string
}

type htmlRow struct {
	ID, Key, Kind       string
	ShortKey, ShortKind string // cut to shortLen, so that a long name cannot widen the table
	Stalled             bool
	Cells               []string // the columns after name and kind
}

// defaultHTMLRows is how many rows the HTML index shows unless ?limit= says
// otherwise: a browser table of tens of thousands of rows helps nobody, and the
// stalled rows come first anyway.
const defaultHTMLRows = 1000

func newIndexPage(idx index, limit int, query url.Values) indexPage {
	shown := idx.Rows
	if limit > 0 && len(shown) > limit {
		shown = shown[:limit]
	}
	page := indexPage{index: idx, Shown: make([]htmlRow, len(shown)), Hidden: len(idx.Rows) - len(shown)}
	cells := make([]string, 0, len(shown)*(len(columns)-2)) // every row's cells, in one allocation
	for i, r := range shown {
		start := len(cells)
		cells = r.appendCells(cells)
		page.Shown[i] = htmlRow{
			ID: strconv.FormatUint(r.ID, 10), Key: r.Key, Kind: r.Kind, Stalled: r.Stalled,
			ShortKey: short(r.Key), ShortKind: short(r.Kind), Cells: cells[start:len(cells):len(cells)],
		}
	}
	for _, c := range columns {
		v := url.Values{"sort": {c.Key}}
		hc := htmlColumn{Key: c.Key, Title: c.Title}
		if c.Key == idx.Sort {
			hc.Arrow = " ▲"
			if idx.Desc {
				hc.Arrow = " ▼"
			} else {
				v.Set("desc", "1")
			}
		}
		hc.Href = "?" + v.Encode()
		page.Columns = append(page.Columns, hc)
	}
	all := url.Values{}
	for k, v := range query {
		all[k] = v
	}
	all.Set("limit", "0")
	page.AllHref = "?" + all.Encode()
	return page
}
