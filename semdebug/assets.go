package semdebug

import (
	_ "embed"
	"net/http"
)

// The pages' style and script, served by the handler itself next to the index
// (the pages link them by relative paths that resolve there from the index and
// from every object's page), so that the Content-Security-Policy can allow the
// page's own origin alone, with nothing inline.

const (
	styleFile  = "page.css"
	scriptFile = "page.js"
)

var (
	//go:embed page.css
	style []byte
	//go:embed page.js
	script []byte
)

// contentSecurityPolicy allows the page's own origin only: its style, its
// script, and the script's fetch of the page itself for the auto-refresh.
const contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"

// serveAsset answers for the asset named name and reports whether there is one.
func serveAsset(w http.ResponseWriter, name string) bool {
	var body []byte
	switch name {
	case styleFile:
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		body = style
	case scriptFile:
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		body = script
	default:
		return false
	}
	w.Write(body) // an error means the client went away: nobody to tell
	return true
}
