// Package browsertest checks the semaphores debug page in a real browser: it
// runs the debugpage example and drives Debian's chromium, headless, through
// chromedp. It is a module of its own so that the core module does not depend on
// chromedp. The test skips when chromium is missing, except with CI=true, where
// it fails.
package browsertest
