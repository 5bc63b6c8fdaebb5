#!/usr/bin/env bash
# witness verify over an event log (hash chain and signed end, then the seal
# checks, in step over one read) against the floor: reading the same bytes
# line by line and hashing each line. Same logs, same run.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(go test -run '^$' -bench 'BenchmarkVerify(Events|Floor)' -benchtime 1x ./verify)
printf '%-28s %8s %14s %12s\n' "benchmark" "events" "events/s" "MB/s"
awk '/^BenchmarkVerify/ {
	split($1, p, "/"); name = p[1]; sub(/^Benchmark/, "", name); sz = p[2]; sub(/-[0-9]+$/, "", sz)
	for (i = 2; i <= NF; i++) { if ($(i+1) == "events/s") ev = $i; if ($(i+1) == "MB/s") mb = $i }
	printf "%-28s %8s %14.0f %12s\n", name, sz, ev, mb
}' <<<"$out"
