//go:build !race

package buildflags_test

const raceEnabled = false
