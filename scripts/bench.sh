#!/usr/bin/env bash
# Runs the benchmarks of this package and its peers (x/sync, a buffered channel,
# sync.Mutex) side by side, prints benchstat's comparison, then the table of
# performance targets with the median ratios. COUNT (default 10) runs of each.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-10}
OUT=${OUT:-new.txt}
export PATH="$(go env GOPATH)/bin:$PATH"
command -v benchstat >/dev/null || go install golang.org/x/perf/cmd/benchstat@latest

go test -run '^$' -bench . -benchmem -count "$COUNT" -cpu 2 . | tee "$OUT"
go test -run '^$' -bench 'Handoff' -benchmem -count "$COUNT" -cpu 4,8 . | tee -a "$OUT"
go test -run '^$' -bench 'WeightedMix' -benchmem -count "$COUNT" -cpu 4,8 . | tee -a "$OUT"

echo
benchstat -col /impl "$OUT"
echo
go run ./scripts/benchratio "$OUT"
