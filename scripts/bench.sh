#!/usr/bin/env bash
# Runs the benchmarks of this package and its peers (x/sync, a buffered channel,
# sync.Mutex) side by side, prints benchstat's comparison, then the table of
# performance targets with the median ratios. COUNT (default 10) runs of each,
# BENCHTIME (default 1s) each.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-1s}
OUT=${OUT:-new.txt}
export PATH="$(go env GOPATH)/bin:$PATH"
command -v benchstat >/dev/null || go install golang.org/x/perf/cmd/benchstat@latest

# One round runs every implementation once, and the rounds are repeated, so that
# the peers are interleaved in time and a slow spell on a shared machine hits them
# alike (go test -count N would run each sub-benchmark N times in a row).
bin=$(mktemp -d)/bench.test
go test -c -o "$bin" .
run() { "$bin" -test.run '^$' -test.benchmem -test.benchtime "$BENCHTIME" "$@" | tee -a "$OUT"; }
: > "$OUT"
for round in $(seq "$COUNT"); do
	echo "round $round of $COUNT" >&2
	run -test.cpu 2 -test.bench .
	run -test.cpu 4,8 -test.bench Handoff
	run -test.cpu 4,8 -test.bench WeightedMix
done

echo
benchstat -col /impl "$OUT"
echo
go run ./scripts/benchratio "$OUT"
