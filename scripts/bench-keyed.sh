#!/usr/bin/env bash
# Runs keyed's benchmark grid (BenchmarkTenant: keys 1 / 100 / 100,000, kept /
# churn, no second level / a global semaphore / the fair limit) against the
# hand-written map of x/sync semaphores, at -cpu 1 and 2, in COUNT interleaved
# rounds (default 10) of BENCHTIME (default 200ms) each, then prints benchstat's
# comparison and the grid's ratios (scripts/keyedgrid). Also measures the bytes
# per active key (BenchmarkActiveKeyBytes).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-200ms}
OUT=${OUT:-keyed-bench.txt}
export PATH="$(go env GOPATH)/bin:$PATH"
command -v benchstat >/dev/null || go install golang.org/x/perf/cmd/benchstat@latest

# One round runs every cell with every implementation once, and the rounds are
# repeated, so that keyed and the map are interleaved in time and a slow spell
# on a shared machine hits them alike.
bin=${BIN:-}
if [ -z "$bin" ]; then # BIN: a test binary of ./keyed built beforehand, as of a commit
	bin=$(mktemp -d)/keyed.test
	go test -c -o "$bin" ./keyed
fi
: > "$OUT"
for round in $(seq "$COUNT"); do
	echo "round $round of $COUNT" >&2
	"$bin" -test.run '^$' -test.benchmem -test.benchtime "$BENCHTIME" -test.cpu 1,2 -test.bench 'Tenant' | tee -a "$OUT" >/dev/null
done
"$bin" -test.run '^$' -test.benchtime 1x -test.bench 'ActiveKeyBytes' | tee -a "$OUT" >/dev/null

echo
benchstat -col /impl -filter '.unit:sec/op' "$OUT"
echo
go run ./scripts/keyedgrid "$OUT"
grep 'B/key' "$OUT"
