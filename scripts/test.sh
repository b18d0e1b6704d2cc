#!/usr/bin/env bash
# The tests of every module in this repository: the README's test command.
#
#	scripts/test.sh [-full] [go test flags]
#
# It runs `go test ./...` in the core module and in each nested module (etcdsem,
# grpcsem, metrics/..., bench/..., semdebug/browsertest, internal/release),
# which `go test ./...` at the root does not enter, then golang.org/x/sync's own
# semaphore tests against the drop-in (scripts/xsync-upstream-tests.sh). The go
# test flags default to -race -count=1. Each package is printed as its tests
# start and end, with the tests it skipped and why (scripts/testprogress).
#
# The default, fast form adds -short and -vet=off: tests that take more than a
# few seconds (fault tests that kill, stop or cut off etcd's processes,
# real-time benchmark programs) skip (internal/fulltest), stress tests run
# fewer rounds, the README's snippets are compiled but not vetted, and x/sync's
# tests run 20 times each; go test's own vet, which computes facts about every
# dependency (etcd's, gRPC's) before it vets a package, is left to -full and to
# CI's go vet. -full runs everything: no -short, go test's vet, and x/sync's
# tests 500 times each. .ci/run runs -full.
set -euo pipefail
cd "$(dirname "$0")/.."

full=false
if [ "${1:-}" = -full ]; then
	full=true
	shift
fi
[ $# -gt 0 ] || set -- -race -count=1
if $full; then
	echo "scripts/test.sh -full: every test of every module; about 14 minutes from a cold build cache on 2 cores, 9 warm"
	xsync=()
else
	echo "scripts/test.sh: every module's tests in their fast form (-short); about 8½ minutes from a cold build cache on 2 cores, 4 warm; scripts/test.sh -full runs all of them"
	set -- -short -vet=off "$@"
	xsync=(-quick)
fi
begun=$SECONDS

# The formatter is built as the tests are (-race), so that it shares their
# compiled standard library.
race=()
for arg in "$@"; do
	if [ "$arg" = -race ]; then
		race=(-race)
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== go build ${race[*]} ./scripts/testprogress (from a cold cache, most of the standard library the tests need is compiled here)"
go build "${race[@]}" -o "$tmp/testprogress" ./scripts/testprogress

failed=()
mapfile -t modules < <(find . -name go.mod -not -path '*/testdata/*' -printf '%h\n' | sort)
for dir in "${modules[@]}"; do
	echo "== go test $* ./... in the module at $dir ($((SECONDS - begun))s so far)"
	if ! go -C "$dir" test -json "$@" ./... 2>&1 | "$tmp/testprogress"; then
		failed+=("$dir")
	fi
done
echo "== x/sync's own semaphore tests against the drop-in, import path changed only ($((SECONDS - begun))s so far)"
if ! scripts/xsync-upstream-tests.sh "${xsync[@]}" -json "$@" 2>&1 | "$tmp/testprogress"; then
	failed+=("x/sync's tests")
fi

took="$(((SECONDS - begun) / 60))m$(printf %02d $(((SECONDS - begun) % 60)))s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "== FAIL in $took: ${failed[*]}"
	exit 1
fi
echo "== ok in $took"
