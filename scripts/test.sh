#!/usr/bin/env bash
# Runs the tests of every module in this repository: the core module and each
# nested module (etcdsem, metrics/...), which `go test ./...` at the root does not
# enter. Arguments are passed to every `go test`; the default is -race -count=1.
# Then it runs golang.org/x/sync/semaphore's own tests against the drop-in, 500
# times each (scripts/xsync-upstream-tests.sh).
# etcd needs no installation: its tests start it from its Go module.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- -race -count=1
mapfile -t modules < <(find . -name go.mod -not -path '*/testdata/*' -printf '%h\n' | sort)
for dir in "${modules[@]}"; do
	echo "== go test $* ./... (module in $dir)"
	go -C "$dir" test "$@" ./...
done
echo "== x/sync's own semaphore tests against the drop-in (import path changed only)"
scripts/xsync-upstream-tests.sh
