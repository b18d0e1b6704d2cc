package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
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

	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "?format=text")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for range 4 { // the summary, a blank line, the header, the first row
			sc.Scan()
		}
		return strings.HasPrefix(sc.Text(), "STALLED") && strings.Contains(sc.Text(), `"report-lock"`)
	}, 20*time.Second, 50*time.Millisecond, "the report lock's row is marked and first")

	resp, err := http.Get(url + "3?format=text")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `"nightly-report" (main.go:`)

	// The adaptive limiter (id 5) shows its numbers, not "-".
	resp, err = http.Get(url + "5?format=text")
	require.NoError(t, err)
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	for _, line := range []string{`(?m)^adaptive limiter "api" \(id 5\)$`, `(?m)^capacity +\d+$`, `(?m)^in use +\d+$`,
		`(?m)^waiters +\d+$`, `(?m)^capacity estimate +(\d+|unknown)$`} {
		assert.Regexp(t, line, string(body))
	}

	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, "stopped", <-lines)
}
