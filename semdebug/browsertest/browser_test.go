package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromium finds the browser. Without it the test skips, except in CI
// (CI=true), where a missing browser is a broken setup and fails the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install -y chromium); CI=true requires the browser test to run")
	}
	t.Skip("chromium is not installed; install it (apt-get install -y chromium) to run the browser test")
	return ""
}

// artifacts is where the screenshots go: $ARTIFACTS if set, else the test's
// temporary directory.
func artifacts(t *testing.T) string {
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// startExample builds and starts examples/debugpage, and returns the URL it
// serves the page at. The example stops when the test ends.
func startExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "debugpage")
	root, err := filepath.Abs("../..") // the core module, which holds the example
	require.NoError(t, err)
	build := exec.Command("go", "-C", root, "build", "-o", bin, "./examples/debugpage")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the example: %s", out)

	cmd := exec.Command(bin, "-for", "2m")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		assert.NoError(t, cmd.Wait(), "the example exits cleanly when interrupted")
	})
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the example prints its URL")
	first := lines.Text()
	require.True(t, strings.HasPrefix(first, "serving http://"), first)
	go func() {
		for lines.Scan() { // drain, so that the example never blocks on its output
		}
	}()
	return strings.TrimPrefix(first, "serving ")
}

func TestDebugPage_InABrowser(t *testing.T) {
	exe := chromium(t)
	dir := artifacts(t)
	url := startExample(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1400, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	// Start the browser on a context without a deadline (a deadline on the first
	// call would bound the browser's life), then bound the whole test.
	require.NoError(t, chromedp.Do(ctx))
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	screenshot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot: %s", path)
	}
	wait := func(what, expression string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](expression, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(30*time.Second)))
		require.NoError(t, err, "waiting until %s", what)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return s
	}

	// The index: the stalled semaphore is marked and first. The page refreshes
	// itself, so the row shows up stalled once its head has waited past the
	// example's threshold of a second.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)))
	wait("the report lock's row is first and marked stalled", `(() => {
		const row = document.querySelector("#index tbody tr");
		return row !== null && row.dataset.key === "report-lock" && row.dataset.stalled === "true" &&
			row.classList.contains("stalled") && row.querySelector(".badge") !== null;
	})()`)
	assert.Equal(t, "STALLED report-lock", text("#index tbody tr td.name"))
	assert.NotEqual(t, "0", text("#stalled-count"))
	screenshot("index.png")

	// Its page: the holder's label and acquire site in the dump, and charts
	// with data.
	// A query waits across the navigation the click starts; a poll would not.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#index tbody tr:first-child td.name a")),
		chromedp.WaitVisible(chromedp.CSS("#diagnostics"))))
	assert.Equal(t, "semaphore report-lock", text("h1"))
	assert.Regexp(t, regexp.MustCompile(`nightly-report \(main\.go:\d+\)`), text("#diagnostics"))
	wait("the charts have data", `["chart-inuse", "chart-waiters", "chart-headwait"].every(id => {
		const c = document.getElementById(id);
		return c !== null && +c.dataset.points > 0 && c.querySelector("polyline") !== null;
	})`)
	marked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("stalled") !== null`))
	require.NoError(t, err)
	assert.True(t, marked, "the object's page says it is stalled")

	// Auto-refresh: the numbers change without a navigation.
	before := map[string]string{"read-at": text("#read-at"), "headwait": text("#headwait"), "samples": text("#samples")}
	prev, err := json.Marshal(before)
	require.NoError(t, err)
	wait("an auto-refresh changed the numbers", fmt.Sprintf(`(() => {
		const prev = %s;
		return +document.body.dataset.refreshes > 0 &&
			["read-at", "headwait", "samples"].every(id => document.getElementById(id).textContent !== prev[id]);
	})()`, prev))
	screenshot("object.png")

	// Pausing stops the refresh.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#pause"))))
	wait("the page says it is paused", `document.body.dataset.paused === "true" && document.getElementById("pause").textContent.startsWith("resume")`)
}
