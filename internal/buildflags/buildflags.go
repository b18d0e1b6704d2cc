// Package buildflags gives a test that runs the go command the flags its own
// binary was built with that decide which compiled packages the go command's
// cache holds: -race. With them, a `go build`, `go vet` or `go list -export`
// run from a test under `go test -race` reuses the packages go test compiled,
// the standard library's among them, instead of compiling everything again
// without the race detector (minutes on two cores from a cold cache).
package buildflags

import "runtime/debug"

// Args returns the flags to pass to the go command: ["-race"] when this
// binary was built with the race detector, else none.
func Args() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return []string{"-race"}
		}
	}
	return nil
}
