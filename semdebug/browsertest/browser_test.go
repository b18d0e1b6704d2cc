package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/fairsem/semaphore"
	"github.com/fairsem/semaphore/semdebug"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromiumPath is the browser's path, or "" when it is not installed.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	return ""
}

// installHint says how to get the browser.
const installHint = "apt-get install -y chromium"

// chromium finds the browser. Without it the test skips, saying why, except
// in CI (CI=true), where a missing browser is a broken setup and fails the
// test.
func chromium(t *testing.T) string {
	t.Helper()
	if path := chromiumPath(); path != "" {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (" + installHint + "); CI=true requires the browser test to run")
	}
	t.Skip("chromium is not installed; install it (" + installHint + ") to run the browser test")
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

// browser drives a headless chromium whose window is width pixels wide. Every
// page it opens records the Content-Security-Policy violations it meets in
// window.cspViolations, which check asserts empty.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // where screenshots go
}

func newBrowser(t *testing.T, width int) *browser {
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(width, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// Start the browser on a context without a deadline (a deadline on the first
	// call would bound the browser's life), then bound the whole test.
	require.NoError(t, chromedp.Do(ctx))
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTimeout)
	// Scripts added this way run before the page's own, whatever its policy.
	require.NoError(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.cspViolations = [];
				document.addEventListener("securitypolicyviolation",
					e => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));`})
		return err
	})))
	return &browser{t: t, ctx: ctx, dir: artifacts(t)}
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, actions...))
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	path := filepath.Join(b.dir, name)
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot: %s", path)
}

// wait polls expression until it is true.
func (b *browser) wait(what, expression string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expression, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(b.t, err, "waiting until %s", what)
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(b.t, err, sel)
	return s
}

func eval[T any](b *browser, expression string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expression))
	require.NoError(b.t, err, expression)
	return v
}

// check asserts that the page met no policy violation: its style and script
// loaded under the Content-Security-Policy.
func (b *browser) check(page string) {
	b.t.Helper()
	assert.Empty(b.t, eval[[]string](b, `window.cspViolations`), "%s: policy violations", page)
	assert.True(b.t, eval[bool](b, `getComputedStyle(document.querySelector("th")).backgroundColor === "rgb(243, 243, 243)"`),
		"%s: the style sheet applies", page)
}

// fits is true when the page is no wider than the window, itself at most
// 1,280 pixels wide.
const fits = `document.documentElement.scrollWidth <= window.innerWidth && window.innerWidth <= 1280`

func TestDebugPage_InABrowser(t *testing.T) {
	b := newBrowser(t, 1280)
	url := startExample(t)

	// The index: the stalled semaphore is marked and first. The page refreshes
	// itself, so the row shows up stalled once its head has waited past the
	// example's threshold of a second.
	resp, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(url))
	require.NoError(t, err)
	assert.Equal(t, "nosniff", resp.Headers["X-Content-Type-Options"])
	assert.Equal(t, "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'",
		resp.Headers["Content-Security-Policy"], "the policy the page works under")
	b.wait("the report lock's row is first and marked stalled", `(() => {
		const row = document.querySelector("#index tbody tr");
		return row !== null && row.dataset.key === "report-lock" && row.dataset.stalled === "true" &&
			row.classList.contains("stalled") && row.querySelector(".badge") !== null;
	})()`)
	assert.Equal(t, "STALLED report-lock", b.text("#index tbody tr td.name"))
	assert.NotEqual(t, "0", b.text("#stalled-count"))
	assert.True(t, eval[bool](b, fits), "the index fits the window: scrollWidth %v",
		eval[float64](b, `document.documentElement.scrollWidth`))
	b.check("index")
	b.screenshot("index.png")

	// Sorting: by capacity, largest first, the stalled row still leading.
	b.do(chromedp.Click(chromedp.CSS(`th.capacity a`)), chromedp.WaitVisible(chromedp.CSS(`#index`)))
	b.do(chromedp.Click(chromedp.CSS(`th.capacity a`)), chromedp.WaitVisible(chromedp.CSS(`#index`)))
	b.wait("the index is sorted by capacity, descending", `location.search === "?desc=1&sort=capacity" &&
		document.querySelector("th.capacity").textContent.endsWith("▼")`)
	keys := eval[[]string](b, `[...document.querySelectorAll("#index tbody tr")].map(r => r.dataset.key)`)
	require.Contains(t, keys, "api", "the adaptive limiter has a row")
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "api" }) // its capacity is its limit, which moves
	assert.Equal(t, []string{"report-lock", "cache", "reads", "db-pool"}, keys, "stalled first, then by capacity")
	b.check("sorted index")

	// Its page: the holder's label and acquire site in the dump, and charts
	// with data.
	// A query waits across the navigation the click starts; a poll would not.
	b.do(chromedp.Click(chromedp.CSS("#index tbody tr:first-child td.name a")),
		chromedp.WaitVisible(chromedp.CSS("#diagnostics")))
	assert.Equal(t, "semaphore report-lock", b.text("h1"))
	assert.Regexp(t, regexp.MustCompile(`"nightly-report" \(main\.go:\d+\)`), b.text("#diagnostics"))
	b.wait("the charts have data", `["chart-inuse", "chart-waiters", "chart-headwait"].every(id => {
		const c = document.getElementById(id);
		return c !== null && +c.dataset.points > 0 && c.querySelector("polyline") !== null;
	})`)
	assert.True(t, eval[bool](b, `document.getElementById("stalled") !== null`), "the object's page says it is stalled")

	// Auto-refresh: the numbers change without a navigation.
	before := map[string]string{"read-at": b.text("#read-at"), "headwait": b.text("#headwait"), "samples": b.text("#samples")}
	prev, err := json.Marshal(before)
	require.NoError(t, err)
	b.wait("an auto-refresh changed the numbers", fmt.Sprintf(`(() => {
		const prev = %s;
		return +document.body.dataset.refreshes > 0 &&
			["read-at", "headwait", "samples"].every(id => document.getElementById(id).textContent !== prev[id]);
	})()`, prev))
	b.check("object")
	b.screenshot("object.png")

	// Pausing stops the refresh.
	b.do(chromedp.Click(chromedp.CSS("#pause")))
	b.wait("the page says it is paused", `document.body.dataset.paused === "true" && document.getElementById("pause").textContent.startsWith("resume")`)
	refreshes := eval[string](b, `document.body.dataset.refreshes`)
	samples := b.text("#samples")
	b.do(chromedp.Sleep(3 * time.Second)) // longer than the refresh interval: nothing may change
	assert.Equal(t, refreshes, eval[string](b, `document.body.dataset.refreshes`), "no refresh while paused")
	assert.Equal(t, samples, b.text("#samples"))

	// The adaptive limiter's page: its limit as the capacity, its calls in
	// flight as in use, its waiters, and its estimate of the backend's capacity
	// among the details, read through its Reading like every other object.
	b.do(chromedp.Navigate(url + "?sort=name"))
	b.wait("the index lists the adaptive limiter", `document.querySelector("#index tbody tr[data-key='api'] td.kind") !== null`)
	assert.Equal(t, "adaptive limiter", b.text("#index tbody tr[data-key='api'] td.kind"))
	b.do(chromedp.Click(chromedp.CSS("#index tbody tr[data-key='api'] td.name a")), chromedp.WaitVisible(chromedp.CSS("#diagnostics")))
	assert.Equal(t, "adaptive limiter api", b.text("h1"))
	for _, id := range []string{"#capacity", "#inuse", "#waiters"} {
		assert.Regexp(t, `^\d+$`, b.text(id), "%s is a number, not unknown", id)
	}
	assert.True(t, eval[bool](b, `[...document.querySelectorAll("#details th")].some(th => th.textContent === "capacity estimate")`),
		"the estimate is among the details")
	b.check("adaptive limiter")
	b.screenshot("adaptive.png")
}

// The page keeps to a 1,280-pixel window whatever the names: a 5,000-character
// name is cut on the index and wraps on its own page, and names with markup and
// line breaks show as text.
func TestDebugPage_HostileNamesInABrowser(t *testing.T) {
	b := newBrowser(t, 1280)
	long := strings.Repeat("long-name-", 500)
	const markup = "<b id=\"injected\">db</b>\n<script>window.injected = true</script>"
	sems := []*semaphore.Semaphore{
		semaphore.New(4, semaphore.WithName(long), semaphore.WithHolderTracking()),
		semaphore.New(2, semaphore.WithName(markup)),
	}
	for _, s := range sems {
		t.Cleanup(semdebug.Register(s))
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/semaphores/", semdebug.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b.do(chromedp.Navigate(srv.URL + "/debug/semaphores/?sort=name"))
	b.wait("the index shows both rows", `document.querySelectorAll("#index tbody tr").length === 2`)
	assert.True(t, eval[bool](b, fits), "the index fits the window: scrollWidth %v, innerWidth %v",
		eval[float64](b, `document.documentElement.scrollWidth`), eval[float64](b, `window.innerWidth`))
	cell := `document.querySelector("#index tbody tr[data-key^='long-name'] td.name")`
	assert.Equal(t, long, eval[string](b, cell+`.title`), "the whole name is in the cell's title")
	assert.Less(t, len(eval[string](b, cell+`.textContent`)), 50, "the cell shows it cut")
	assert.Equal(t, markup, eval[string](b, `document.querySelector("#index tbody tr:not([data-key^='long-name'])").dataset.key`))
	assert.False(t, eval[bool](b, `document.getElementById("injected") !== null || window.injected === true`),
		"the markup in a name is text")
	b.check("index")
	b.screenshot("hostile-index.png")

	b.do(chromedp.Click(chromedp.CSS(`#index tbody tr[data-key^='long-name'] td.name a`)),
		chromedp.WaitVisible(chromedp.CSS("#diagnostics")))
	assert.Equal(t, "semaphore "+long, b.text("h1"), "the object's page shows the whole name")
	assert.True(t, eval[bool](b, fits), "the object's page fits the window: scrollWidth %v",
		eval[float64](b, `document.documentElement.scrollWidth`))
	b.check("object")
	b.screenshot("hostile-object.png")
	runtime.KeepAlive(sems)
}
