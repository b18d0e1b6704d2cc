//go:build race

package semaphore

// checkLocks turns on the assertions that a lock is held where the code relies on
// it. They are made in race-enabled builds, where the tests run, and compiled out
// of every other build.
const checkLocks = true
