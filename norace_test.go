//go:build !race

package semaphore_test

const raceEnabled = false
