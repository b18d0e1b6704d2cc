package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// lineWriter hands each line run prints to the test.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		w <- strings.TrimSpace(line)
	}
	return len(p), nil
}

func TestRun_ServesTheStalledSemaphoreFirstAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(lineWriter, 4)
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", lines) }()
	first := <-lines
	require.True(t, strings.HasPrefix(first, "serving http://"), first)
	url := strings.TrimPrefix(first, "serving ")

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}
	var index string
	require.Eventually(t, func() bool {
		index = get("?format=text")
		rows := strings.Split(index, "\n") // the summary, a blank line, the header, the first row
		return len(rows) > 3 && strings.HasPrefix(rows[3], "STALLED") && strings.Contains(rows[3], `"report-lock"`)
	}, 20*time.Second, 50*time.Millisecond, "the report lock's row is marked and first")
	// Ids are never reused, so they depend on what the process registered
	// before (-count): read them from the index.
	idOf := func(name string) string {
		m := regexp.MustCompile(`(?m)^(?:STALLED)?\s+(\d+)\s+"` + name + `"`).FindStringSubmatch(index)
		require.Len(t, m, 2, "%s has a row:\n%s", name, index)
		return m[1]
	}

	assert.Contains(t, get(idOf("report-lock")+"?format=text"), `"nightly-report" (main.go:`)

	// The adaptive limiter shows its numbers, not "-".
	id := idOf("api")
	page := get(id + "?format=text")
	for _, line := range []string{`(?m)^adaptive limiter "api" \(id ` + id + `\)$`, `(?m)^capacity +\d+$`, `(?m)^in use +\d+$`,
		`(?m)^waiters +\d+$`, `(?m)^capacity estimate +(\d+|unknown)$`} {
		assert.Regexp(t, line, page)
	}

	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, "stopped", <-lines)
}
