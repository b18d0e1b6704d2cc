//go:build !race

package semaphore

// checkLocks: see lockcheck_race.go.
const checkLocks = false
