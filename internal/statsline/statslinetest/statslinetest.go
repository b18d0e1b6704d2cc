// Package statslinetest checks that a Stats type's String names every field,
// so that a field added to a Stats struct without its pair on the line fails
// the package's tests.
package statslinetest

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// EveryField fails t unless line, the String of a Stats value of v's type,
// holds " key=" for every exported field of that struct type but Name (the
// line's subject): key is renamed[field] when the field is there ("" leaves
// the field out), else the field's name in snake case (TimedOut: timed_out,
// NeedCPUPermits: need_cpu_permits).
func EveryField(t testing.TB, v any, line string, renamed map[string]string) {
	t.Helper()
	typ := reflect.TypeOf(v)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() || f.Name == "Name" {
			continue
		}
		key, ok := renamed[f.Name]
		if !ok {
			key = Snake(f.Name)
		}
		if key != "" && !strings.Contains(line, " "+key+"=") {
			t.Errorf("%s.String() does not name the field %s as %q: %s", typ, f.Name, key+"=", line)
		}
	}
}

// Snake writes a Go field name in snake case.
func Snake(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
