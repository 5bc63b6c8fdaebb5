#!/usr/bin/env bash
# Round-trip latency of tools/call against server-everything (node, the
# reference) and the fast echo server (testdata/servers/echo): direct,
# through a bare hop (a process that forwards like the proxy, in the same
# way, recording nothing: the floor of one extra process), through
# `witness proxy` (the real binary as a separate process, as a host runs
# it) and through the proxy library in-process. The modes run side by
# side and take turns round trip by round trip (BenchmarkRoundTrip), so a
# change in the machine's load hits them alike. Prints p50/p99 per mode and
# each mode's p50 as a ratio of direct. N round trips per run
# ($PROXY_BENCH_N), $PROXY_BENCH_COUNT runs, servers $PROXY_BENCH_SERVERS
# (default "everything,echo"); each cell is the median over runs.
# $WITNESS_BIN_BASE (comma-separated witness binaries) adds rows base,
# base2, ... for A/B comparisons in the same alternating runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${PROXY_BENCH_N:-3000}"
count="${PROXY_BENCH_COUNT:-3}"
servers="${PROXY_BENCH_SERVERS:-everything,echo}"
[ -x bin/witness ] || go build -o bin/witness ./cmd/witness
out=$(WITNESS_BIN="$PWD/bin/witness" WITNESS_BIN_BASE="${WITNESS_BIN_BASE:-}" PROXY_BENCH_SERVERS="$servers" go test -run '^$' -bench '^BenchmarkRoundTrip$' -benchtime "${n}x" -count "$count" ./proxy 2>&1) || {
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
	split($1, a, "/"); srv = a[2]; sub(/-[0-9]+$/, "", srv)
	if (!(srv in seen)) { seen[srv] = 1; sorder[++ns] = srv }
	for (i = 2; i < NF; i++) {
		unit = $(i+1)
		if (unit !~ /-(p50|p99)-µs$|-p50-ratio$/) continue
		mode = unit; sub(/-(p50|p99)-µs$|-p50-ratio$/, "", mode)
		what = unit; sub(/^[a-z0-9]+-/, "", what)
		key = srv SUBSEP mode
		mseen[key] = 1
		vals[srv, mode, what] = vals[srv, mode, what] " " $i
	}
}
END {
	printf "%-12s %-10s %10s %10s %14s\n", "server", "via", "p50 (µs)", "p99 (µs)", "p50 / direct"
	for (s = 1; s <= ns; s++) {
		srv = sorder[s]
		no = split("direct hop proxy base base2 base3 inprocess", order, " ")
		for (j = 1; j <= no; j++) {
			m = order[j]
			if (!((srv, m) in mseen)) continue
			r = (m == "direct") ? "1.00" : sprintf("%.2f", median(vals[srv, m, "p50-ratio"]))
			printf "%-12s %-10s %10.0f %10.0f %13sx\n", srv, m, median(vals[srv, m, "p50-µs"]), median(vals[srv, m, "p99-µs"]), r
		}
	}
	printf "(median of %d runs of %d round trips per mode; the modes take turns round trip by round trip;\n", count, n
	printf " ratios are per run, then the median; a loaded machine moves p99 most)\n"
}'
