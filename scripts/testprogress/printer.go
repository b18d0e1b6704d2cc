package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// printer turns the events of one `go test -json` run into lines for a human.
type printer struct {
	w    io.Writer
	trim string           // left out of package names
	now  func() time.Time // the clock, a fake in tests

	begun     time.Time // when the run began
	lastPrint time.Time // when a line was last printed
	pkgs      map[string]*pkgRun
	ended     []ended // in the order the packages ended
	noTests   int     // packages without test files
	failed    bool    // a test, a package or a build failed
}

// pkgRun is a package whose test binary started and has not ended.
type pkgRun struct {
	name    string    // as printed
	began   time.Time // its "start" event
	shown   bool      // its start line was printed
	tests   map[string]*testRun
	output  []string // output of the package not attributed to a test
	skipped []skip   // in the order the tests ended
}

// testRun is a test that has not ended: its output so far.
type testRun struct {
	began time.Time
	lines []string
}

type skip struct{ test, reason string }

type ended struct {
	name    string
	elapsed time.Duration
	failed  bool
}

func newPrinter(w io.Writer, trim string, now func() time.Time) *printer {
	return &printer{w: w, trim: trim, now: now, begun: now(), lastPrint: now(), pkgs: map[string]*pkgRun{}}
}

// name is how a package is printed: its import path less the prefix, or the
// last element of the prefix for the package the prefix names.
func (p *printer) name(pkg string) string {
	if pkg+"/" == p.trim {
		pkg = pkg[strings.LastIndexByte(pkg, '/')+1:]
	}
	return strings.TrimPrefix(pkg, p.trim)
}

// handle takes one event.
func (p *printer) handle(e event) {
	switch e.Action {
	case "build-output":
		p.printf("%s", e.Output)
		return
	case "build-fail":
		p.failed = true
		return
	}
	if e.Package == "" {
		return
	}
	pr := p.pkgs[e.Package]
	if pr == nil {
		// A "start" event, or, from an older go command, the first event.
		pr = &pkgRun{name: p.name(e.Package), began: p.now(), tests: map[string]*testRun{}}
		p.pkgs[e.Package] = pr
	}
	if e.Test != "" {
		p.testEvent(pr, e)
		return
	}
	switch e.Action {
	case "output":
		if strings.HasPrefix(e.Output, "?   \t") {
			return // "[no test files]": the package ends at once, without a line
		}
		p.show(pr)
		pr.output = append(pr.output, e.Output)
	case "pass", "fail", "skip":
		delete(p.pkgs, e.Package)
		if e.Action == "skip" && !pr.shown {
			p.noTests++
			return
		}
		p.end(pr, e)
	}
}

// testEvent takes an event of one of pr's tests.
func (p *printer) testEvent(pr *pkgRun, e event) {
	p.show(pr)
	tr := pr.tests[e.Test]
	if tr == nil {
		tr = &testRun{began: p.now()}
		pr.tests[e.Test] = tr
	}
	switch e.Action {
	case "output":
		tr.lines = append(tr.lines, e.Output)
	case "pass":
		delete(pr.tests, e.Test)
	case "skip":
		delete(pr.tests, e.Test)
		pr.skipped = append(pr.skipped, skip{e.Test, skipReason(tr.lines)})
	case "fail":
		delete(pr.tests, e.Test)
		p.failed = true
		p.printf("%-6s %s %s (%.2fs)\n", "FAIL", pr.name, e.Test, e.Elapsed)
		p.printLines(tr.lines)
	}
}

// show prints pr's start line, once.
func (p *printer) show(pr *pkgRun) {
	if !pr.shown {
		pr.shown = true
		p.printf("%-6s %s\n", "start", pr.name)
	}
}

// end prints pr's end line, and what it printed outside its tests if it failed.
func (p *printer) end(pr *pkgRun, e event) {
	p.show(pr)
	elapsed := time.Duration(e.Elapsed * float64(time.Second))
	failed := e.Action == "fail"
	p.ended = append(p.ended, ended{pr.name, elapsed, failed})
	note := ""
	switch {
	case e.FailedBuild != "":
		note = " [build failed]"
	case slices.ContainsFunc(pr.output, func(s string) bool { return strings.Contains(s, "[no tests to run]") }):
		note = " [no tests to run]"
	}
	if failed {
		p.failed = true
		p.printUnended(pr)
		p.printLines(pr.output)
		p.printf("%-6s %-28s %s%s\n", "FAIL", pr.name, fmtSeconds(elapsed), note)
	} else {
		p.printf("%-6s %-28s %s%s\n", "ok", pr.name, fmtSeconds(elapsed), note)
	}
	p.printSkips(pr)
}

// printUnended prints the output of pr's tests that never ended: a panic or a
// timeout stopped the test binary while they ran.
func (p *printer) printUnended(pr *pkgRun) {
	for _, name := range slices.Sorted(maps.Keys(pr.tests)) {
		if lines := pr.tests[name].lines; len(lines) > 0 {
			p.printf("%-6s %s %s (did not end)\n", "FAIL", pr.name, name)
			p.printLines(lines)
		}
	}
}

// printSkips prints pr's skipped tests, grouped by the reason they gave.
func (p *printer) printSkips(pr *pkgRun) {
	var reasons []string
	tests := map[string][]string{}
	for _, s := range pr.skipped {
		if tests[s.reason] == nil {
			reasons = append(reasons, s.reason)
		}
		tests[s.reason] = append(tests[s.reason], s.test)
	}
	for _, r := range reasons {
		names := tests[r]
		list := strings.Join(names[:min(len(names), 3)], ", ")
		if len(names) > 3 {
			list += fmt.Sprintf(" and %d more", len(names)-3)
		}
		p.printf("%-6s skipped %s: %s\n", "", list, r)
	}
}

// printLines prints output lines as they came, less the lines that only say
// a test started, paused or continued.
func (p *printer) printLines(lines []string) {
	for _, l := range lines {
		if !isFraming(l) {
			p.printf("%s", l)
		}
	}
}

// isFraming reports whether l is one of the lines go test prints when a test
// starts, pauses or continues.
func isFraming(l string) bool {
	for _, f := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(l, f) {
			return true
		}
	}
	return false
}

// fileLine is the position go test puts before a line a test logged.
var fileLine = regexp.MustCompile(`^[^\s:]+\.go:\d+: `)

// skipReason is the first line a skipped test logged, without its position,
// cut to 200 characters.
func skipReason(lines []string) string {
	for _, l := range lines {
		if isFraming(l) || strings.HasPrefix(strings.TrimSpace(l), "--- SKIP") {
			continue
		}
		l = fileLine.ReplaceAllString(strings.TrimSpace(l), "")
		if l == "" {
			continue
		}
		if utf8.RuneCountInString(l) > 200 {
			l = string([]rune(l)[:199]) + "…"
		}
		return l
	}
	return "no reason given"
}

// heartbeat says what is running, since nothing was printed for a while.
func (p *printer) heartbeat() {
	var running []*pkgRun
	for _, pr := range p.pkgs {
		if pr.shown {
			running = append(running, pr)
		}
	}
	slices.SortFunc(running, func(a, b *pkgRun) int { return a.began.Compare(b.began) })
	now := p.now()
	what := "compiling (no package's tests are running)"
	if len(running) > 0 {
		var parts []string
		for _, pr := range running {
			part := pr.name + " for " + fmtDuration(now.Sub(pr.began))
			if t := oldestTest(pr); t != "" {
				part += ", in " + t
			}
			parts = append(parts, part)
		}
		what = "running " + strings.Join(parts, "; ")
	}
	p.printf("%-6s %s: %s\n", "...", fmtDuration(now.Sub(p.begun)), what)
}

// oldestTest is the name of pr's test that has run the longest, or "".
func oldestTest(pr *pkgRun) string {
	name, began := "", time.Time{}
	for n, t := range pr.tests {
		if name == "" || t.began.Before(began) || (t.began.Equal(began) && n < name) {
			name, began = n, t.began
		}
	}
	return name
}

// finish prints the packages the input left running and the summary, and
// reports whether everything passed.
func (p *printer) finish() bool {
	for _, pkg := range slices.Sorted(maps.Keys(p.pkgs)) {
		pr := p.pkgs[pkg]
		if !pr.shown {
			continue
		}
		p.failed = true
		p.printUnended(pr)
		p.printLines(pr.output)
		p.printf("%-6s %-28s (the output ended while its tests ran)\n", "FAIL", pr.name)
		p.ended = append(p.ended, ended{pr.name, p.now().Sub(pr.began), true})
	}
	var failed []string
	for _, e := range p.ended {
		if e.failed {
			failed = append(failed, e.name)
		}
	}
	slowest := slices.Clone(p.ended)
	slices.SortStableFunc(slowest, func(a, b ended) int { return cmp.Compare(b.elapsed, a.elapsed) })
	var top []string
	for _, e := range slowest[:min(len(slowest), 3)] {
		top = append(top, e.name+" "+fmtSeconds(e.elapsed))
	}
	summary := fmt.Sprintf("%d packages tested, %d failed", len(p.ended), len(failed))
	if len(failed) > 0 {
		summary += " (" + strings.Join(failed, ", ") + ")"
	}
	if p.noTests > 0 {
		summary += fmt.Sprintf(", %d without tests", p.noTests)
	}
	summary += ", in " + fmtDuration(p.now().Sub(p.begun))
	if len(top) > 0 {
		summary += "; slowest: " + strings.Join(top, ", ")
	}
	if p.failed && len(failed) == 0 {
		summary += "; a build failed"
	}
	p.printf("%-6s %s\n", "done", summary)
	return !p.failed
}

// fmtSeconds writes a package's time as go test does: 12.34s.
func fmtSeconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// fmtDuration writes a wall time to the second: 45s, 2m05s.
func fmtDuration(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}
