// Command testprogress reads the output of `go test -json` on standard input
// and prints one line when each package's tests start and one when they end,
// with the time they took, so that a long run says what it is doing. It adds
// under each package the tests skipped, grouped by the reason they gave, and
// prints the output of every test that failed, as go test does. While nothing
// else is printed, it says every -every (30s by default) which packages are
// running and for how long, or that the go command is compiling. At the end it
// prints a summary with the slowest packages. scripts/test.sh pipes every
// module's tests through it.
//
// It exits with status 1 if a package or a test failed, a package failed to
// build, or the input ended before a started package did.
//
//	go test -json ./... | testprogress [-trim PREFIX] [-every 30s]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	trim := flag.String("trim", "github.com/fairsem/semaphore/", "the import path prefix to leave out of package names")
	every := flag.Duration("every", 30*time.Second, "how long without output before saying what is running")
	flag.Parse()
	p := newPrinter(os.Stdout, *trim, time.Now)
	if !p.run(os.Stdin, *every) {
		os.Exit(1)
	}
}

// event is one line of `go test -json`: a TestEvent (cmd/test2json), or a
// BuildEvent (ImportPath, Action "build-output" or "build-fail") of a
// package that did not compile.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// run prints the events read from r until it ends, and what is running
// whenever every passes without output. It reports whether everything passed.
func (p *printer) run(r io.Reader, every time.Duration) bool {
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 64<<20) // a test may print long lines
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	tick := time.NewTicker(every / 3)
	defer tick.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return p.finish()
			}
			var e event
			if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
				p.printf("%s\n", line) // not an event: the go command's own words
				continue
			}
			p.handle(e)
		case <-tick.C:
			if p.now().Sub(p.lastPrint) >= every {
				p.heartbeat()
			}
		}
	}
}

// printf writes to the output and notes when, for the heartbeat.
func (p *printer) printf(format string, args ...any) {
	fmt.Fprintf(p.w, format, args...)
	p.lastPrint = p.now()
}
