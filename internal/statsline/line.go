// Package statsline writes the one-line form every package's Stats prints as
// with %v (its String method):
//
//	semaphore "db" capacity=10 available=3 held=7 waiters=2 broken=false acquired=120 ...
//
// the subject first, `KIND "NAME"` (`unnamed KIND` without a name), then one
// key=value pair per field, each key the field's name in the words the README,
// Diagnostics and the metrics use (snake case: timed_out, wait_time), in the
// order the fields are declared. A name is quoted as Go quotes strings, so
// newlines, markup and invalid UTF-8 cannot break the line or pass for a field;
// it is written whole, as in errors. A Stats type extends its line by adding
// one call per new field, where its String lists the others.
package statsline

import (
	"strconv"
	"strings"
	"time"

	"github.com/fairsem/semaphore/internal/errs"
)

// A Line is the line being written. Its methods append one key=value pair each.
type Line struct{ b strings.Builder }

// New begins the line of a KIND named name.
func New(kind, name string) *Line {
	l := new(Line)
	if name == "" {
		l.b.WriteString("unnamed " + kind)
	} else {
		l.b.WriteString(kind + " " + strconv.Quote(name))
	}
	return l
}

// Quoted begins the line of a KIND named s, quoted even when empty: a
// keyed set's key "" is a key like any other.
func Quoted(kind, s string) *Line {
	l := new(Line)
	l.b.WriteString(kind + " " + strconv.Quote(s))
	return l
}

// Int adds key=v.
func (l *Line) Int(key string, v int64) { l.Word(key, strconv.FormatInt(v, 10)) }

// Uint adds key=v.
func (l *Line) Uint(key string, v uint64) { l.Word(key, strconv.FormatUint(v, 10)) }

// Bool adds key=true or key=false.
func (l *Line) Bool(key string, v bool) { l.Word(key, strconv.FormatBool(v)) }

// Duration adds key=d, rounded as the module's errors round waits: to the
// millisecond from a second up, to 10µs from a millisecond, else to the
// microsecond.
func (l *Line) Duration(key string, d time.Duration) { l.Word(key, errs.Round(d).String()) }

// Time adds key=t in RFC 3339 to the millisecond, in UTC, so that lines
// from machines in different zones compare.
func (l *Line) Time(key string, t time.Time) {
	l.Word(key, t.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}

// Quote adds key=v, v quoted as the name is.
func (l *Line) Quote(key, v string) { l.Word(key, strconv.Quote(v)) }

// Word adds key=v with v as it is: a word of the caller's making (6M,
// unknown, never) that holds no space.
func (l *Line) Word(key, v string) {
	l.b.WriteByte(' ')
	l.b.WriteString(key)
	l.b.WriteByte('=')
	l.b.WriteString(v)
}

// String returns the line.
func (l *Line) String() string { return l.b.String() }
