#!/usr/bin/env bash
# witness firewall evaluate (code rules of the bundled policy, history window
# per conversation, audit snapshot written) against its floor: reading and
# decoding the same log's message events. Then audit verification throughput.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(go test -run '^$' -bench 'Benchmark(Evaluate|EvaluateFloor|VerifyAudit)$' -benchtime 1x ./firewall/internal/core)
printf '%-22s %10s %14s %10s\n' "benchmark" "messages" "msgs/s" "MB/s"
awk '/^Benchmark/ {
	split($1, p, "/"); name = p[1]; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
	sz = p[2]; sub(/^messages=/, "", sz); sub(/-[0-9]+$/, "", sz); if (sz == "") sz = "-"
	ms = "-"; mb = "-"
	for (i = 2; i <= NF; i++) { if ($(i+1) == "msgs/s") ms = sprintf("%.0f", $i); if ($(i+1) == "MB/s") mb = $i }
	printf "%-22s %10s %14s %10s\n", name, sz, ms, mb
}' <<<"$out"
