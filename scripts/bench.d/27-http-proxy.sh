#!/usr/bin/env bash
# What `witness proxy --listen` adds to a model API call, with its model
# events deriver, against the scripted model server (testdata/modelserver)
# answering real openai SDK requests (BenchmarkAddedLatency in ./httpproxy):
# for a non-streamed Chat Completions call with tool calls (json) the round
# trip, for a streamed one (sse) the time to the first chunk. Direct and proxied calls take turns call by call in the same run;
# "added" is proxy minus direct per pair of calls. N calls per mode per run
# ($HTTP_BENCH_N), $HTTP_BENCH_COUNT runs; each cell is the median over
# runs, in µs.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${HTTP_BENCH_N:-2000}"
count="${HTTP_BENCH_COUNT:-3}"
out=$(go test -run '^$' -bench '^BenchmarkAddedLatency$' -benchtime "${n}x" -count "$count" ./httpproxy 2>&1) || {
	echo "$out"
	exit 1
}
echo "$out" | awk -v n="$n" -v count="$count" '
function median(s,    v, m, i, j, t) {
	m = split(s, v, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return v[int((m + 1) / 2)]
}
/^BenchmarkAddedLatency\// {
	split($1, a, "/"); kind = a[2]; sub(/-[0-9]+$/, "", kind)
	if (!(kind in seen)) { seen[kind] = 1; order[++nk] = kind }
	for (i = 2; i < NF; i++) if ($(i+1) ~ /-µs$/) vals[kind, $(i+1)] = vals[kind, $(i+1)] " " $i
}
END {
	printf "%-6s %-22s %10s %10s\n", "call", "measure", "p50 (µs)", "p99 (µs)"
	for (k = 1; k <= nk; k++) {
		kind = order[k]
		what = (kind == "sse") ? "first chunk" : "round trip"
		printf "%-6s %-22s %10.0f %10.0f\n", kind, "direct " what, median(vals[kind, "direct-p50-µs"]), median(vals[kind, "direct-p99-µs"])
		printf "%-6s %-22s %10.0f %10.0f\n", kind, "proxy " what, median(vals[kind, "proxy-p50-µs"]), median(vals[kind, "proxy-p99-µs"])
		printf "%-6s %-22s %10.0f %10.0f\n", kind, "added by the proxy", median(vals[kind, "added-p50-µs"]), median(vals[kind, "added-p99-µs"])
	}
	printf "(median of %d runs of %d calls per mode; direct and proxied calls alternate;\n", count, n
	printf " the proxy writes every chunk to its cassette before forwarding it and\n"
	printf " derives model_input/model_output events; upstream: testdata/modelserver)\n"
}'
