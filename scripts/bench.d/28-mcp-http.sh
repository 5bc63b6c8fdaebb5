#!/usr/bin/env bash
# What `witness proxy --listen` adds to an MCP tools/call over Streamable
# HTTP, against server-everything in streamableHttp mode
# (BenchmarkMCPRoundTrip in ./httpproxy): the round trip from the POST to
# the end of its server-sent event answer, direct, through a bare hop (a
# plain httputil.ReverseProxy recording nothing: the floor of one extra
# HTTP hop) and through the proxy, calls taking turns in the same run. $MCP_BENCH_N calls per mode per run,
# $MCP_BENCH_COUNT runs; each cell is the median over runs, in µs. Target:
# proxy p50 within 15% of direct.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${MCP_BENCH_N:-1000}"
count="${MCP_BENCH_COUNT:-3}"
out=$(go test -run '^$' -bench '^BenchmarkMCPRoundTrip$' -benchtime "${n}x" -count "$count" ./httpproxy 2>&1) || {
	echo "$out"
	exit 1
}
echo "$out" | awk -v n="$n" -v count="$count" '
function median(s,    v, m, i, j, t) {
	m = split(s, v, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
	return v[int((m + 1) / 2)]
}
/^BenchmarkMCPRoundTrip/ {
	for (i = 2; i < NF; i++) if ($(i+1) ~ /-µs$/) vals[$(i+1)] = vals[$(i+1)] " " $i
}
END {
	d50 = median(vals["direct-p50-µs"]); d99 = median(vals["direct-p99-µs"])
	h50 = median(vals["hop-p50-µs"]); h99 = median(vals["hop-p99-µs"])
	p50 = median(vals["proxy-p50-µs"]); p99 = median(vals["proxy-p99-µs"])
	printf "%-32s %10s %10s\n", "MCP tools/call (server-everything)", "p50 (µs)", "p99 (µs)"
	printf "%-32s %10.0f %10.0f\n", "direct", d50, d99
	printf "%-32s %10.0f %10.0f\n", "through a bare hop (floor)", h50, h99
	printf "%-32s %10.0f %10.0f\n", "through witness proxy --listen", p50, p99
	if (d50 > 0) {
		printf "%-32s %+9.1f%% %+9.1f%%\n", "hop vs direct", 100 * (h50 - d50) / d50, 100 * (h99 - d99) / d99
		printf "%-32s %+9.1f%% %+9.1f%%\n", "proxy vs direct", 100 * (p50 - d50) / d50, 100 * (p99 - d99) / d99
	}
	printf "(median of %d runs of %d calls per mode; the modes take turns call by call)\n", count, n
}'
