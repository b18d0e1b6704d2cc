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
// They use no external asset, and one small inline script: the auto-refresh,
// which replaces the page's content in place and can be paused.

var funcs = template.FuncMap{
	"age":     ageText,
	"rate":    rateText,
	"millis":  func(d time.Duration) int64 { return d.Milliseconds() },
	"charts":  charts,
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"inc":     func(i int) int { return i + 1 },
}

const style = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; }
header { display: flex; gap: 1em; align-items: baseline; }
h1 { font-size: 1.3em; margin: 0 0 .5em; }
h2 { font-size: 1.1em; margin: 1.2em 0 .4em; }
table { border-collapse: collapse; }
th, td { padding: 2px 10px; text-align: right; border-bottom: 1px solid #ddd; white-space: nowrap; }
th { background: #f3f3f3; }
td.name, th.name, td.kind, th.kind, td.text { text-align: left; }
th a { color: inherit; text-decoration: none; }
tr.stalled { background: #fde2e2; }
.badge { background: #c0392b; color: #fff; border-radius: 3px; padding: 0 4px; font-size: .8em; font-weight: bold; }
.muted { color: #777; }
pre { background: #f7f7f7; padding: .6em; overflow-x: auto; }
figure { display: inline-block; margin: 0 1em 1em 0; }
figcaption { font-size: .9em; }
svg.chart { width: 600px; height: 130px; background: #fafafa; border: 1px solid #ddd; }
svg.chart polyline { fill: none; stroke: #2c6fbb; stroke-width: 1.5; }
svg.chart line { stroke: #bbb; }
svg.chart text { font-size: 10px; fill: #555; }
`

// refreshScript reloads the content every data-refresh-ms, unless paused; the
// pause survives the refresh and reloads of the tab.
const refreshScript = `
(function () {
  var body = document.body, ms = +body.dataset.refreshMs, btn = document.getElementById("pause");
  var paused = sessionStorage.getItem("semdebug-paused") === "1", timer = null;
  function show() {
    btn.textContent = paused ? "resume auto-refresh" : "pause auto-refresh";
    body.dataset.paused = paused ? "true" : "false";
  }
  function schedule() {
    clearTimeout(timer);
    if (!paused && ms > 0) timer = setTimeout(refresh, ms);
  }
  function refresh() {
    fetch(location.href, {cache: "no-store"}).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.text();
    }).then(function (text) {
      var next = new DOMParser().parseFromString(text, "text/html").getElementById("content");
      if (next && !paused) {
        document.getElementById("content").replaceWith(next);
        body.dataset.refreshes = +body.dataset.refreshes + 1;
      }
    }).catch(function () {}).then(schedule);
  }
  if (!btn) return;
  btn.hidden = !(ms > 0);
  btn.addEventListener("click", function () {
    paused = !paused;
    sessionStorage.setItem("semdebug-paused", paused ? "1" : "0");
    show();
    schedule();
  });
  show();
  schedule();
})();
`

const header = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{block "title" .}}{{end}}</title>
<style>` + style + `</style></head>
<body data-refresh-ms="{{millis .Refresh}}" data-refreshes="0">
<header><h1>{{template "title" .}}</h1>
<button id="pause" type="button" hidden>pause auto-refresh</button>
<a href="">reload</a> <a href="?format=json">json</a> <a href="?format=text">text</a></header>
`

const footer = `<script>` + refreshScript + `</script>
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
<td class="name">{{if .Stalled}}<span class="badge">STALLED</span> {{end}}<a href="{{.ID}}">{{.Key}}</a></td>
<td class="kind">{{.Kind}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{if .Hidden}}<p id="hidden">{{.Hidden}} more rows not shown: <a href="{{.AllHref}}">show all</a> or ask for ?format=text or ?format=json.</p>{{end}}
</main>
` + footer))

var objectTemplate = template.Must(template.New("object").Funcs(funcs).Parse(header + `{{define "title"}}{{.Kind}} {{.Key}}{{end}}
<main id="content">
<p><a href="./">all semaphores</a> &middot; id {{.ID}} &middot; read at <span id="read-at">{{rfc3339 .At}}</span>
{{if .Stalled}}&middot; <span class="badge" id="stalled">STALLED</span> head waiting over {{.Threshold}}{{end}}</p>
<table id="facts">
<tr><th class="text">capacity</th><td>{{.Capacity}}</td><th class="text">acquired</th><td>{{.Acquired}}</td><td>{{rate .Rates .Rates.Acquired}}/s</td></tr>
<tr><th class="text">in use</th><td id="inuse">{{.InUse}}</td><th class="text">timed out</th><td>{{.TimedOut}}</td><td>{{rate .Rates .Rates.TimedOut}}/s</td></tr>
<tr><th class="text">available</th><td>{{.Available}}</td><th class="text">shed</th><td>{{.Shed}}</td><td>{{rate .Rates .Rates.Shed}}/s</td></tr>
<tr><th class="text">waiters</th><td id="waiters">{{.Waiters}}</td><th class="text">head wait</th><td id="headwait" colspan="2">{{.HeadWaitText}}</td></tr>
<tr><th class="text">broken</th><td class="text">{{.BrokenText}}</td><th class="text">oldest holder</th><td colspan="2">{{age .OldestHolder}}</td></tr>
</table>
<h2>Last {{with index (charts .History .At) 0}}{{.Span}}{{end}}</h2>
<p class="muted">Sampled every second while this page is open, or while Record runs; <span id="samples">{{len .History}}</span> samples.</p>
{{range charts .History .At}}<figure><figcaption>{{.Title}}{{if .N}}: now {{.Last}}, top {{.Max}}{{end}}</figcaption>
<svg class="chart" id="{{.ID}}" data-points="{{.N}}" viewBox="0 0 600 130" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{{.Title}}">
<line x1="0" y1="110" x2="600" y2="110"/><line x1="0" y1="10" x2="600" y2="10" stroke-dasharray="4 4"/>
<text x="2" y="8">{{.Max}}</text><text x="2" y="124">-{{.Span}}</text><text x="575" y="124">now</text>
{{if .N}}<polyline points="{{.Points}}"/>{{else}}<text x="200" y="60">no samples yet</text>{{end}}
</svg></figure>
{{end}}
<h2>Holders</h2>
{{if .Holders}}<table id="holders"><tr><th>holders</th><th>units</th><th>oldest</th><th class="name">site</th><th class="name">label</th></tr>
{{range .Holders}}<tr><td>{{.Holders}}</td><td>{{.Units}}</td><td>{{age .Age}}</td><td class="text">{{.Site}}</td><td class="text">{{.Label}}</td></tr>
{{end}}</table>{{else}}<p class="muted">Not listed by this {{.Kind}}: see its dump below.</p>{{end}}
<h2>Waiters</h2>
{{if .WaitList}}<table id="waitlist"><tr><th>position</th><th>units</th><th>waited</th></tr>
{{range $i, $w := .WaitList}}<tr><td>{{inc $i}}</td><td>{{$w.Units}}</td><td>{{age $w.Waited}}</td></tr>
{{end}}</table>{{else if .Waiters}}<p class="muted">{{.Waiters}} waiting; not listed by this {{.Kind}}: see its dump below.</p>{{else}}<p class="muted">Nobody waits.</p>{{end}}
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
	ID, Key, Kind string
	Stalled       bool
	Cells         [10]string // the columns after name and kind
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
	for i, r := range shown {
		page.Shown[i] = htmlRow{
			ID: strconv.FormatUint(r.ID, 10), Key: r.Key, Kind: r.Kind, Stalled: r.Stalled,
			Cells: [10]string{
				strconv.FormatInt(r.Capacity, 10), strconv.FormatInt(r.InUse, 10), strconv.FormatInt(r.Available, 10),
				strconv.Itoa(r.Waiters), r.HeadWaitText(), ageText(r.OldestHolder), yesNo(r.Broken),
				rateText(r.Rates, r.Rates.Acquired), rateText(r.Rates, r.Rates.TimedOut), rateText(r.Rates, r.Rates.Shed),
			},
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
