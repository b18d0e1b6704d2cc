// Package browsertest checks the semaphores debug page in a real browser: it
// runs the debugpage example, and a page of hostile names, and drives Debian's
// chromium, headless, through chromedp: the page works under its
// Content-Security-Policy (auto-refresh, pause, sorting, charts), fits a
// 1,280-pixel window whatever the names, and shows markup in names as text. It
// is a module of its own so that the core module does not depend on chromedp.
// Without chromium each test skips, saying that chromium is not installed and
// how to install it (scripts/test.sh prints every skip with its reason, as go
// test -v does), except with CI=true, where they fail.
package browsertest
