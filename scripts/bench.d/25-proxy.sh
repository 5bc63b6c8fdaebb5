#!/usr/bin/env bash
# Round-trip latency of tools/call against a fast local MCP server
# (testdata/servers/echo): direct, and through `witness proxy` (the real
# binary as a separate process, and the proxy library in-process). Prints
# p50/p99 per round trip and what the proxy adds. N round trips per run
# ($PROXY_BENCH_N), $PROXY_BENCH_COUNT runs; each cell is the median over runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${PROXY_BENCH_N:-3000}"
count="${PROXY_BENCH_COUNT:-3}"
[ -x bin/witness ] || go build -o bin/witness ./cmd/witness
out=$(WITNESS_BIN="$PWD/bin/witness" go test -run '^$' -bench '^BenchmarkRoundTrip$' -benchtime "${n}x" -count "$count" ./proxy 2>&1) || {
	echo "$out"
	exit 1
}
echo "$out" | awk -v n="$n" -v count="$count" '
function median(s,    v, m, i, j, t) {
	m = split(s, v, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return v[int((m + 1) / 2)]
}
/^BenchmarkRoundTrip\// {
	split($1, a, "/"); mode = a[2]; sub(/-[0-9]+$/, "", mode)
	for (i = 2; i <= NF; i++) { if ($(i+1) == "p50-µs") s50[mode] = s50[mode] " " $i; if ($(i+1) == "p99-µs") s99[mode] = s99[mode] " " $i }
	if (!(mode in seen)) { seen[mode] = 1; order[++k] = mode }
}
END {
	for (j = 1; j <= k; j++) { m = order[j]; p50[m] = median(s50[m]); p99[m] = median(s99[m]) }
	printf "%-18s %10s %10s %12s %12s\n", "tools/call via", "p50 (µs)", "p99 (µs)", "added p50", "added p99"
	for (j = 1; j <= k; j++) {
		m = order[j]
		if (m == "direct") { ap = "-"; aq = "-" } else { ap = sprintf("%+.0f", p50[m] - p50["direct"]); aq = sprintf("%+.0f", p99[m] - p99["direct"]) }
		printf "%-18s %10.0f %10.0f %12s %12s\n", m, p50[m], p99[m], ap, aq
	}
	printf "(median of %d runs of %d round trips each, after 50 warm-up pings; a loaded machine moves p99 most)\n", count, n
}'
