// Package fulltest marks the tests that only the full form of the test command
// runs (scripts/test.sh -full, which .ci/run runs): under go test -short, the
// fast form (scripts/test.sh), they skip and say why, and the test command
// prints the reason under the package.
//
// The rule, for every module of the repository: a test that would take more
// than a few seconds in the fast form, or that hurts a process or a server,
// calls Fault or Long first. A stress test keeps running in the fast form with
// fewer rounds (if testing.Short() { rounds = ... }) rather than skip. A
// module whose tests start a server (etcd, a broker) runs its plain tests
// against one server in both forms and its fault tests in the full form only.
package fulltest

import "testing"

// Fault skips t under -short: a test that kills, stops or cuts off a process
// or a server (SIGKILL, SIGSTOP, a network partition, the loss of a leader).
func Fault(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("fault test (kills, stops or cuts off a process): skipped by -short; scripts/test.sh -full runs it")
	}
}

// Long skips t under -short: a test that takes seconds on two cores (a
// benchmark program's run, a convergence over many windows, a measurement of
// the heap).
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("long test (seconds on two cores): skipped by -short; scripts/test.sh -full runs it")
	}
}
