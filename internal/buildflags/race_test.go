//go:build race

package buildflags_test

const raceEnabled = true
