//go:build race

package keyed_test

const raceEnabled = true
