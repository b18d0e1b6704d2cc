package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const prefix = "github.com/fairsem/semaphore/"

// clock is a fake clock that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// stream writes events as go test -json does, one JSON object a line.
func stream(t *testing.T, events ...event) string {
	var b strings.Builder
	for _, e := range events {
		line, err := json.Marshal(e)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// runEvents prints in from a printer on a fake clock, and returns the output
// and whether run reported success.
func runEvents(t *testing.T, in string) (string, bool) {
	var out strings.Builder
	c := &clock{t: time.Unix(0, 0)}
	p := newPrinter(&out, prefix, c.now)
	ok := p.run(strings.NewReader(in), time.Hour)
	return out.String(), ok
}

func out(pkg, test, s string) event {
	return event{Action: "output", Package: prefix + pkg, Test: test, Output: s}
}

func TestRun_PrintsEachPackageAsItStartsAndEndsAndGroupsSkipsByReason(t *testing.T) {
	in := stream(t,
		event{Action: "start", Package: prefix + "keyed"},
		event{Action: "start", Package: prefix + "examples/shutdown"},
		out("examples/shutdown", "", "?   \tgithub.com/fairsem/semaphore/examples/shutdown\t[no test files]\n"),
		event{Action: "skip", Package: prefix + "examples/shutdown"},
		event{Action: "run", Package: prefix + "keyed", Test: "TestA"},
		out("keyed", "TestA", "=== RUN   TestA\n"),
		out("keyed", "TestA", "--- PASS: TestA (0.00s)\n"),
		event{Action: "pass", Package: prefix + "keyed", Test: "TestA"},
		event{Action: "run", Package: prefix + "keyed", Test: "TestLong"},
		out("keyed", "TestLong", "=== RUN   TestLong\n"),
		out("keyed", "TestLong", "    stress_test.go:58: long: runs in scripts/test.sh -full\n"),
		out("keyed", "TestLong", "--- SKIP: TestLong (0.00s)\n"),
		event{Action: "skip", Package: prefix + "keyed", Test: "TestLong"},
		event{Action: "run", Package: prefix + "keyed", Test: "TestLong2"},
		out("keyed", "TestLong2", "    stress_test.go:200: long: runs in scripts/test.sh -full\n"),
		event{Action: "skip", Package: prefix + "keyed", Test: "TestLong2"},
		event{Action: "run", Package: prefix + "keyed", Test: "TestBrowser"},
		out("keyed", "TestBrowser", "    browser_test.go:52: chromium is not installed\n"),
		event{Action: "skip", Package: prefix + "keyed", Test: "TestBrowser"},
		event{Action: "run", Package: prefix + "keyed", Test: "TestQuiet"},
		event{Action: "skip", Package: prefix + "keyed", Test: "TestQuiet"},
		out("keyed", "", "PASS\n"),
		out("keyed", "", "ok  \tgithub.com/fairsem/semaphore/keyed\t1.5s\n"),
		event{Action: "pass", Package: prefix + "keyed", Elapsed: 1.5},
		event{Action: "start", Package: "github.com/fairsem/semaphore"},
		event{Action: "run", Package: "github.com/fairsem/semaphore", Test: "TestB"},
		event{Action: "pass", Package: "github.com/fairsem/semaphore", Test: "TestB"},
		event{Action: "pass", Package: "github.com/fairsem/semaphore", Elapsed: 3.25},
	)
	got, ok := runEvents(t, in)
	assert.True(t, ok)
	assert.Equal(t, `start  keyed
ok     keyed                        1.50s
       skipped TestLong, TestLong2: long: runs in scripts/test.sh -full
       skipped TestBrowser: chromium is not installed
       skipped TestQuiet: no reason given
start  semaphore
ok     semaphore                    3.25s
done   2 packages tested, 0 failed, 1 without tests, in 0s; slowest: semaphore 3.25s, keyed 1.50s
`, got)
}

func TestRun_ManySkipsForOneReasonAreCounted(t *testing.T) {
	events := []event{{Action: "start", Package: prefix + "p"}}
	for _, name := range []string{"T1", "T2", "T3", "T4", "T5"} {
		events = append(events, out("p", name, "    x_test.go:1: short\n"), event{Action: "skip", Package: prefix + "p", Test: name})
	}
	events = append(events, event{Action: "pass", Package: prefix + "p", Elapsed: 0.01})
	got, ok := runEvents(t, stream(t, events...))
	assert.True(t, ok)
	assert.Contains(t, got, "       skipped T1, T2, T3 and 2 more: short\n")
}

func TestRun_PrintsTheOutputOfAFailedTestAndFails(t *testing.T) {
	in := stream(t,
		event{Action: "start", Package: prefix + "adaptive"},
		out("adaptive", "TestOK", "=== RUN   TestOK\n"),
		out("adaptive", "TestOK", "    ok_test.go:3: noise of a passing test\n"),
		event{Action: "pass", Package: prefix + "adaptive", Test: "TestOK"},
		out("adaptive", "TestBad", "=== RUN   TestBad\n"),
		out("adaptive", "TestBad", "    bad_test.go:9: want 1, got 2\n"),
		out("adaptive", "TestBad", "--- FAIL: TestBad (0.25s)\n"),
		event{Action: "fail", Package: prefix + "adaptive", Test: "TestBad", Elapsed: 0.25},
		out("adaptive", "", "FAIL\n"),
		event{Action: "fail", Package: prefix + "adaptive", Elapsed: 0.5},
	)
	got, ok := runEvents(t, in)
	assert.False(t, ok)
	assert.Equal(t, `start  adaptive
FAIL   adaptive TestBad (0.25s)
    bad_test.go:9: want 1, got 2
--- FAIL: TestBad (0.25s)
FAIL
FAIL   adaptive                     0.50s
done   1 packages tested, 1 failed (adaptive), in 0s; slowest: adaptive 0.50s
`, got)
	assert.NotContains(t, got, "noise of a passing test")
}

// A panic or a timeout ends the test binary while tests run: their output is
// what explains it.
func TestRun_PrintsTheOutputOfTestsThatNeverEnded(t *testing.T) {
	in := stream(t,
		event{Action: "start", Package: prefix + "etcdsem"},
		out("etcdsem", "TestHang", "=== RUN   TestHang\n"),
		out("etcdsem", "TestHang", "panic: test timed out after 10m0s\n"),
		out("etcdsem", "", "FAIL\tgithub.com/fairsem/semaphore/etcdsem\t600.1s\n"),
		event{Action: "fail", Package: prefix + "etcdsem", Elapsed: 600.1},
	)
	got, ok := runEvents(t, in)
	assert.False(t, ok)
	assert.Contains(t, got, "FAIL   etcdsem TestHang (did not end)\npanic: test timed out after 10m0s\n")
	assert.Contains(t, got, "FAIL   etcdsem                      600.10s\n")
}

func TestRun_ABuildFailurePrintsTheCompilerAndFails(t *testing.T) {
	in := stream(t,
		event{Action: "build-output", ImportPath: prefix + "group [" + prefix + "group.test]", Output: "# " + prefix + "group\n"},
		event{Action: "build-output", ImportPath: prefix + "group [" + prefix + "group.test]", Output: "group/group.go:3:1: syntax error\n"},
		event{Action: "build-fail", ImportPath: prefix + "group [" + prefix + "group.test]"},
		event{Action: "start", Package: prefix + "group"},
		out("group", "", "FAIL\tgithub.com/fairsem/semaphore/group [build failed]\n"),
		event{Action: "fail", Package: prefix + "group", FailedBuild: prefix + "group [" + prefix + "group.test]"},
	)
	got, ok := runEvents(t, in)
	assert.False(t, ok)
	assert.True(t, strings.HasPrefix(got, "# "+prefix+"group\ngroup/group.go:3:1: syntax error\n"), got)
	assert.Contains(t, got, "FAIL   group                        0.00s [build failed]\n")
}

func TestRun_InputEndingWhileAPackageRunsFails(t *testing.T) {
	in := stream(t,
		event{Action: "start", Package: prefix + "netsem"},
		out("netsem", "TestX", "=== RUN   TestX\n"),
		out("netsem", "TestX", "signal: killed\n"),
	)
	got, ok := runEvents(t, in)
	assert.False(t, ok)
	assert.Contains(t, got, "FAIL   netsem TestX (did not end)\nsignal: killed\n")
	assert.Contains(t, got, "FAIL   netsem                       (the output ended while its tests ran)\n")
}

func TestRun_PassesOnLinesThatAreNotEvents(t *testing.T) {
	got, ok := runEvents(t, "go: downloading example.com/x v1.0.0\n")
	assert.True(t, ok)
	assert.Equal(t, "go: downloading example.com/x v1.0.0\ndone   0 packages tested, 0 failed, in 0s\n", got)
}

func TestRun_MarksAPackageThatRanNoTests(t *testing.T) {
	in := stream(t,
		event{Action: "start", Package: prefix + "p"},
		out("p", "", "testing: warning: no tests to run\n"),
		out("p", "", "ok  \tgithub.com/fairsem/semaphore/p\t0.01s [no tests to run]\n"),
		event{Action: "pass", Package: prefix + "p", Elapsed: 0.01},
	)
	got, _ := runEvents(t, in)
	assert.Contains(t, got, "ok     p                            0.01s [no tests to run]\n")
}

func TestHeartbeat_SaysWhatRunsAndForHowLong(t *testing.T) {
	var b strings.Builder
	c := &clock{t: time.Unix(0, 0)}
	p := newPrinter(&b, prefix, c.now)
	c.advance(20 * time.Second)
	p.heartbeat()
	assert.Equal(t, "...    20s: compiling (no package's tests are running)\n", b.String())

	b.Reset()
	p.handle(event{Action: "start", Package: prefix + "etcdsem"})
	p.handle(event{Action: "run", Package: prefix + "etcdsem", Test: "TestFaults"})
	c.advance(5 * time.Second)
	p.handle(event{Action: "start", Package: prefix + "keyed"})
	p.handle(event{Action: "run", Package: prefix + "keyed", Test: "TestB"})
	p.handle(event{Action: "run", Package: prefix + "keyed", Test: "TestA"})
	c.advance(100 * time.Second)
	b.Reset()
	p.heartbeat()
	assert.Equal(t, "...    2m05s: running etcdsem for 1m45s, in TestFaults; keyed for 1m40s, in TestA\n", b.String())
}

func TestSkipReason_DropsThePositionAndCutsLongReasons(t *testing.T) {
	assert.Equal(t, "why", skipReason([]string{"=== RUN   TestX\n", "    x_test.go:12: why\n", "--- SKIP: TestX (0.00s)\n"}))
	assert.Equal(t, "why: a:b.go:1: c", skipReason([]string{"    x_test.go:12: why: a:b.go:1: c\n"}))
	long := strings.Repeat("é", 300)
	got := skipReason([]string{"    x_test.go:1: " + long + "\n"})
	assert.Equal(t, strings.Repeat("é", 199)+"…", got)
	assert.Equal(t, "no reason given", skipReason([]string{"--- SKIP: TestX (0.00s)\n"}))
}

func TestName_TrimsTheModulePrefix(t *testing.T) {
	p := newPrinter(nil, prefix, time.Now)
	assert.Equal(t, "keyed", p.name(prefix+"keyed"))
	assert.Equal(t, "semaphore", p.name("github.com/fairsem/semaphore"))
	assert.Equal(t, "etcdsem/cmd/semctl", p.name(prefix+"etcdsem/cmd/semctl"))
	assert.Equal(t, "example.com/other", p.name("example.com/other"))
}
