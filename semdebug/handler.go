package semdebug

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Handler returns the debug page of everything registered with Register. Mount
// it on a path ending in a slash, behind whatever guards your other internals:
//
//	mux.Handle("/debug/semaphores/", semdebug.Handler())
//
// The path itself shows the index; the path followed by an object's id shows
// that object. Both answer GET with HTML, with JSON for ?format=json and with
// plain text for ?format=text. The path followed by page.css and page.js serves
// the HTML pages' style and script. Every response carries
// X-Content-Type-Options: nosniff and a Content-Security-Policy that allows the
// page's own origin only. Importing the package mounts nothing anywhere.
// Handler panics if an option is given an invalid value.
func Handler(opts ...Option) http.Handler {
	return newHandler(defaultRegistry, opts...)
}

// An Option configures a Handler.
type Option func(*handler)

// WithStallThreshold marks an object as stalled, and sorts it first, when its head
// waiter has waited longer than d (default 5s). It panics if d is not positive.
func WithStallThreshold(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("semdebug: WithStallThreshold(%v): the threshold must be positive", d))
	}
	return func(h *handler) { h.threshold = d }
}

// WithRefresh sets how often the HTML pages refresh themselves (default 2s); 0
// turns auto-refresh off. Viewers can pause it on the page. It panics if d is
// negative.
func WithRefresh(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("semdebug: WithRefresh(%v): the interval must not be negative", d))
	}
	return func(h *handler) { h.refresh = d }
}

// diagnosticsLines bounds each table of the Diagnostics dump on an object's page.
const diagnosticsLines = 100

type handler struct {
	reg       *registry
	threshold time.Duration // fixed after newHandler
	refresh   time.Duration // fixed after newHandler
}

func newHandler(reg *registry, opts ...Option) *handler {
	h := &handler{reg: reg, threshold: 5 * time.Second, refresh: 2 * time.Second}
	for _, o := range opts {
		o(h)
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every response, errors included, is taken for what its Content-Type says
	// and runs nothing from elsewhere.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	format := r.URL.Query().Get("format")
	switch format {
	case "", "html", "json", "text":
	default:
		http.Error(w, fmt.Sprintf("unknown format %q: want html, json or text", format), http.StatusBadRequest)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	last := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	if last == "" {
		h.serveIndex(w, r, format)
		return
	}
	if serveAsset(w, last) {
		return
	}
	id, err := strconv.ParseUint(last, 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h.serveObject(w, r, format, id)
}

func (h *handler) serveIndex(w http.ResponseWriter, r *http.Request, format string) {
	q := r.URL.Query()
	idx := h.index(q.Get("sort"), q.Get("desc") == "1")
	switch format {
	case "json":
		writeJSON(w, indexJSON(idx))
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		writeIndexText(w, idx)
	default:
		limit := defaultHTMLRows
		if l, err := strconv.Atoi(q.Get("limit")); err == nil && l >= 0 {
			limit = l
		}
		h.writeHTML(w, indexTemplate, newIndexPage(idx, limit, q))
	}
}

func (h *handler) serveObject(w http.ResponseWriter, r *http.Request, format string, id uint64) {
	e := h.reg.lookup(id)
	var l Limiter
	if e != nil {
		l = e.load()
	}
	if l == nil {
		http.Error(w, fmt.Sprintf("no object with id %d: it was unregistered or collected", id), http.StatusNotFound)
		return
	}
	page := h.object(e, l)
	// Sampling starts after the page is read, so that the history the page
	// shows is what was sampled before this view, whatever the sampler's
	// first reading races with.
	h.reg.leaseSampling(e)
	switch format {
	case "json":
		writeJSON(w, objectJSON(page))
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		writeObjectText(w, page)
	default:
		h.writeHTML(w, objectTemplate, &page)
	}
}
