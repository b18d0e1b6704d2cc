package readmecheck

import (
	"go/scanner"
	"go/token"
	"slices"
	"strings"
)

// rootModule is the module directory, relative to the repository, of the core module.
const rootModule = "."

// A pkg is a package a snippet may select from without importing it.
type pkg struct {
	path   string // import path
	module string // module directory whose go.mod provides it; "" for the standard library
}

// packages maps the name a snippet selects from (etcdsem.New) to the package. It
// covers the repository's packages and the standard library packages the README
// uses; a snippet naming another package fails with "undefined".
var packages = map[string]pkg{
	// The core module.
	"semaphore": {"github.com/fairsem/semaphore", rootModule},
	"adaptive":  {"github.com/fairsem/semaphore/adaptive", rootModule},
	"admission": {"github.com/fairsem/semaphore/admission", rootModule},
	"group":     {"github.com/fairsem/semaphore/group", rootModule},
	"httpsem":   {"github.com/fairsem/semaphore/httpsem", rootModule},
	"keyed":     {"github.com/fairsem/semaphore/keyed", rootModule},
	"netsem":    {"github.com/fairsem/semaphore/netsem", rootModule},
	"semdebug":  {"github.com/fairsem/semaphore/semdebug", rootModule},

	// Nested modules and the dependencies only they require.
	"etcdsem":    {"github.com/fairsem/semaphore/etcdsem", "etcdsem"},
	"amqpsem":    {"github.com/fairsem/semaphore/amqpsem", "amqpsem"},
	"clientv3":   {"go.etcd.io/etcd/client/v3", "etcdsem"},
	"prom":       {"github.com/fairsem/semaphore/metrics/prom", "metrics/prom"},
	"prometheus": {"github.com/prometheus/client_golang/prometheus", "metrics/prom"},
	"otel":       {"github.com/fairsem/semaphore/metrics/otel", "metrics/otel"},
	"metric":     {"go.opentelemetry.io/otel/metric", "metrics/otel"},
	"grpcsem":    {"github.com/fairsem/semaphore/grpcsem", "grpcsem"},
	"grpc":       {"google.golang.org/grpc", "grpcsem"},

	// The standard library.
	"context": {"context", ""},
	"errors":  {"errors", ""},
	"expvar":  {"expvar", ""},
	"fmt":     {"fmt", ""},
	"http":    {"net/http", ""},
	"io":      {"io", ""},
	"log":     {"log", ""},
	"math":    {"math", ""},
	"net":     {"net", ""},
	"os":      {"os", ""},
	"slog":    {"log/slog", ""},
	"strings": {"strings", ""},
	"sync":    {"sync", ""},
	"time":    {"time", ""},
}

// selectedPackages returns the sorted names of the table's packages that the Go
// code selects from: an identifier followed by a period and not itself preceded
// by one (so p.Await counts p, and a.b.c counts only a). Comments and string
// literals are tokens of their own, so names in them do not count.
func selectedPackages(code string) []string {
	var s scanner.Scanner
	src := []byte(code)
	s.Init(token.NewFileSet().AddFile("", -1, len(src)), src, nil, 0)
	seen := map[string]bool{}
	prev := token.ILLEGAL
	var ident string // the previous token's text, when it was an identifier
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && ident != "" {
			if _, ok := packages[ident]; ok {
				seen[ident] = true
			}
		}
		ident = ""
		if tok == token.IDENT && prev != token.PERIOD {
			ident = lit
		}
		prev = tok
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// moduleOf returns the module directory that can compile a snippet selecting the
// named packages: the one nested module they need, or the root module when they
// need none. It reports false, with the modules involved, when they need two.
func moduleOf(names []string) (string, bool) {
	var nested []string
	for _, name := range names {
		if m := packages[name].module; m != "" && m != rootModule {
			nested = append(nested, m)
		}
	}
	slices.Sort(nested)
	nested = slices.Compact(nested)
	switch len(nested) {
	case 0:
		return rootModule, true
	case 1:
		return nested[0], true
	default:
		return strings.Join(nested, " and "), false
	}
}
