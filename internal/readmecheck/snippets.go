package readmecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// A snippet is the text of one ```go block.
type snippet struct {
	line int    // README line of the snippet's first line (the one after the fence)
	code string // the lines between the fences, each ending in "\n"
}

// parseSnippets returns the ```go blocks of a Markdown document in order. A fence
// is a line that starts with three backquotes after optional indentation; a block
// opened by "```go" (or "```go" followed by other info) ends at the next fence.
// It returns an error for a block that is never closed.
func parseSnippets(readme []byte) ([]snippet, error) {
	var (
		out     []snippet
		inBlock bool // inside any fenced block
		isGo    bool // the open block is a Go block
		cur     strings.Builder
		start   int // README line of the open block's first line
		opened  int // README line of the open block's fence
	)
	sc := bufio.NewScanner(bytes.NewReader(readme))
	sc.Buffer(nil, len(readme)+1)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " \t")
		if !strings.HasPrefix(trimmed, "```") {
			if inBlock && isGo {
				cur.WriteString(line)
				cur.WriteByte('\n')
			}
			continue
		}
		if inBlock {
			if isGo {
				out = append(out, snippet{line: start, code: cur.String()})
				cur.Reset()
			}
			inBlock, isGo = false, false
			continue
		}
		info := strings.Fields(strings.TrimPrefix(trimmed, "```"))
		inBlock, isGo = true, len(info) > 0 && info[0] == "go"
		start, opened = n+1, n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if inBlock {
		return nil, fmt.Errorf("README.md:%d: code block never closed", opened)
	}
	return out, nil
}
