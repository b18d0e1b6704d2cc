#!/usr/bin/env bash
# Runs golang.org/x/sync/semaphore's own tests against the drop-in
# github.com/fairsem/semaphore/xsync/semaphore, with only their import path
# changed. The test files are taken from the module cache at run time and
# removed afterwards; nothing of x/sync is kept in this repository.
#
# Each test runs 500 times, enough to catch a grant racing a cancellation
# (TestWeightedAcquireCanceled), except TestWeighted, a hammer paced by sleeps
# (about 2.5 s a run on two cores), which runs 5 times. With -quick (the fast
# form of scripts/test.sh) they run 20 times and TestWeighted once. The other
# arguments are passed to every `go test`, before the counts, which they do not
# change.
#
#	scripts/xsync-upstream-tests.sh [-quick] [go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
count=500 hammer=5
if [ "${1:-}" = -quick ]; then
	count=20 hammer=1
	shift
fi
XSYNC=golang.org/x/sync@v0.19.0
dir=$(go mod download -json "$XSYNC" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
dst=xsync/semaphore
trap 'rm -f "$dst"/zz_upstream_*_test.go' EXIT
for f in semaphore_test.go semaphore_example_test.go; do
	sed 's#"golang.org/x/sync/semaphore"#"github.com/fairsem/semaphore/xsync/semaphore"#' \
		"$dir/semaphore/$f" >"$dst/zz_upstream_$f"
done
tests=$(sed -n 's/^func \(\(Test\|Example\)[A-Za-z0-9_]*\)(.*/\1/p' "$dst"/zz_upstream_*_test.go | grep -vx TestWeighted | paste -sd '|')
go test "$@" -count=$count -run "^($tests)\$" ./"$dst"
go test "$@" -count=$hammer -run '^TestWeighted$' ./"$dst"
