//go:build race

package semaphore_test

// raceEnabled scales down the longest stress loops, which the race detector
// slows by an order of magnitude.
const raceEnabled = true
