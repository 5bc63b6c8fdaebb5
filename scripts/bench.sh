#!/usr/bin/env bash
# `make bench`: Go benchmarks of every package, then each side-by-side
# comparison in scripts/bench.d/ (in name order), each printing its own table.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== go benchmarks"
go test -run '^$' -bench . -benchmem ./... | grep -E '^(Benchmark|ok|FAIL|---)' || true
for part in scripts/bench.d/*.sh; do
	[ -e "$part" ] || continue
	echo
	echo "== $(basename "$part" .sh)"
	bash "$part"
done
