// Package hostile holds the texts the module's tests give wherever a user or a
// peer controls a value (a name, a Break's cause, a holder's label, a key, a
// client's name): every text form must show each of them as one quoted value,
// never as markup, a line or a field of its own.
package hostile

import "strings"

// A Text is one hostile value, named for what it tries.
type Text struct {
	Name, Value string
}

// Texts are the hostile values: long, markup, line breaks that would forge a
// row, quotes and backslashes, terminal escapes and tabs, and bytes that are
// not UTF-8.
var Texts = []Text{
	{"5,000 characters", strings.Repeat("long-text-", 500)},
	{"markup", `<script>alert(1)</script><img src=x onerror=alert(2)>&amp;`},
	{"a forged row", "closing\nSTALLED  99  \"db\"  8  8\r\nin use  0"},
	{"quotes", `"db" \"x\" 'y'`},
	{"escapes and tabs", "a\x1b[2J\tb\x00c"},
	{"invalid UTF-8", "caf\xe9 \xff\xfe"},
}
