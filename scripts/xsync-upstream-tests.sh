#!/usr/bin/env bash
# Runs golang.org/x/sync/semaphore's own tests against the drop-in
# github.com/fairsem/semaphore/xsync/semaphore, with only their import path
# changed. The test files are taken from the module cache at run time and
# removed afterwards; nothing of x/sync is kept in this repository.
set -euo pipefail
cd "$(dirname "$0")/.."
XSYNC=golang.org/x/sync@v0.19.0
dir=$(go mod download -json "$XSYNC" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
dst=xsync/semaphore
trap 'rm -f "$dst"/zz_upstream_*_test.go' EXIT
for f in semaphore_test.go semaphore_example_test.go; do
	sed 's#"golang.org/x/sync/semaphore"#"github.com/fairsem/semaphore/xsync/semaphore"#' \
		"$dir/semaphore/$f" >"$dst/zz_upstream_$f"
done
go test -count=1 "$@" ./"$dst"
