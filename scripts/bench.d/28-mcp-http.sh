#!/usr/bin/env bash
# What `witness proxy --listen` adds to an MCP tools/call over Streamable
# HTTP, against server-everything in streamableHttp mode
# (BenchmarkMCPRoundTrip in ./httpproxy): the round trip from the POST to
# the end of its server-sent event answer, direct, through a bare hop (a
# plain httputil.ReverseProxy recording nothing: the floor of one extra
# HTTP hop) and through the proxy (in the benchmark's process, and the
# witness binary as a process of its own), calls taking turns in the same
# run. $WITNESS_BIN_BASE (comma-separated witness binaries) adds rows
# base, base2, ... for A/B comparisons. $MCP_BENCH_N calls per mode per run,
# $MCP_BENCH_COUNT runs; each cell is the median over runs, in µs. Target:
# proxy p50 within 15% of direct. With MCP_BENCH_COUNT=1,
# WITNESS_CPUPROFILE=FILE has the binary write a CPU profile of its session
# to FILE (go tool pprof -top bin/witness FILE).
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${MCP_BENCH_N:-1000}"
count="${MCP_BENCH_COUNT:-3}"
[ -x bin/witness ] || go build -o bin/witness ./cmd/witness
out=$(WITNESS_BIN="$PWD/bin/witness" WITNESS_BIN_BASE="${WITNESS_BIN_BASE:-}" go test -run '^$' -bench '^BenchmarkMCPRoundTrip$' -benchtime "${n}x" -count "$count" ./httpproxy 2>&1) || {
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
	# the ratio of each p50 to direct, per run
	d = 0
	for (i = 2; i < NF; i++) if ($(i+1) == "direct-p50-µs") d = $i
	for (i = 2; i < NF; i++) if ($(i+1) ~ /-p50-µs$/ && d > 0) { m = $(i+1); sub(/-p50-µs$/, "", m); ratio[m] = ratio[m] " " ($i / d) }
}
END {
	printf "%-32s %10s %10s %14s\n", "MCP tools/call (server-everything)", "p50 (µs)", "p99 (µs)", "p50 vs direct"
	no = split("direct hop proxy binary base base2 base3", order, " ")
	label["direct"] = "direct"; label["hop"] = "bare hop (floor)"; label["proxy"] = "proxy, in-process"
	label["binary"] = "witness proxy --listen"; label["base"] = "base"; label["base2"] = "base2"; label["base3"] = "base3"
	for (j = 1; j <= no; j++) {
		m = order[j]
		if (!((m "-p50-µs") in vals)) continue
		r = (m == "direct") ? "" : sprintf("%+.1f%%", 100 * (median(ratio[m]) - 1))
		printf "%-32s %10.0f %10.0f %14s\n", label[m], median(vals[m "-p50-µs"]), median(vals[m "-p99-µs"]), r
	}
	printf "(median of %d runs of %d calls per mode; the modes take turns call by call;\n", count, n
	printf " the ratio is taken per run, then the median)\n"
}'
