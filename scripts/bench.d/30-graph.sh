#!/usr/bin/env bash
# Graph benchmark (make bench): canonical N-Quads of synthetic event logs of
# 10k, 100k and 1M events (deterministic generator: internal/synthlog),
# side by side in the same run with json-gold (ToRDF + URDNA2015) and npm
# jsonld.js 9 (rdf-canonize RDFC-1.0) on the same 10k and 100k graphs, and
# the floor: reading and sha256-ing the event log. Each measurement is one
# process; peak RSS is its getrusage maximum. All three canonical outputs
# must have the same sha256 ("same" column).
#
# GRAPH_BENCH_SIZES="10000 100000"   sizes to run (default 10000 100000 1000000)
# GRAPH_BENCH_PEERS_MAX=100000       largest size the peers run on
# GRAPH_BENCH_DIR=DIR                where generated logs are cached
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes="${GRAPH_BENCH_SIZES:-10000 100000 1000000}"
peers_max="${GRAPH_BENCH_PEERS_MAX:-100000}"
dir="${GRAPH_BENCH_DIR:-${TMPDIR:-/tmp}/witness-bench-graph}"
mkdir -p "$dir"
bin="$dir/witness-bench"
go build -o "$bin" ./cmd/witness-bench
# generated logs are cached, keyed by the generator's source
genkey=$(cat internal/synthlog/synthlog.go eventlog/event.go eventlog/eventio.go | sha256sum | cut -c1-12)
node_ok=0
if command -v node >/dev/null && [ -d testdata/peers/node_modules/jsonld ]; then node_ok=1; fi

field() { sed -E "s/.*\"$1\":(\"([^\"]*)\"|([0-9.e+-]+)).*/\2\3/" <<<"$2"; }

printf '%-9s %-24s %10s %12s %12s %11s %12s  %s\n' events implementation seconds events/s quads peak_MiB MB/s sha256
row() { # events impl json
	local n="$1" impl="$2" j="$3" s rss q b d
	s=$(field seconds "$j"); rss=$(field max_rss_mib "$j"); q=$(field quads "$j"); b=$(field bytes "$j"); d=$(field sha256 "$j")
	[ -n "$d" ] && [ "$d" != "$j" ] || d=$(field digest "$j")
	[ "$q" != "$j" ] || q="-"
	awk -v n="$n" -v impl="$impl" -v s="$s" -v q="$q" -v rss="$rss" -v b="$b" -v d="$d" 'BEGIN {
		printf "%-9s %-24s %10.3f %12.0f %12s %11s %12.1f  %s\n", n, impl, s, n/s, q, rss, b/1e6/s, substr(d,1,16) }'
}
for n in $sizes; do
	log="$dir/events-$n-$genkey.jsonl"
	if [ ! -s "$log" ]; then
		echo "(generating $n events: $log)" >&2
		"$bin" gen "$n" "$log.tmp" >/dev/null && mv "$log.tmp" "$log"
	fi
	row "$n" "floor: read+sha256 log" "$("$bin" floor "$log")"
	ours=$("$bin" stream "$log")
	row "$n" "witness (streamed)" "$ours"
	if [ "$n" -le "$peers_max" ]; then
		doc="$dir/graph-$n-$genkey.jsonld"
		[ -s "$doc" ] || "$bin" jsonld "$log" "$doc" >/dev/null
		gold=$("$bin" jsongold "$doc")
		row "$n" "json-gold v0.9.1" "$gold"
		same="same"
		[ "$(field digest "$gold")" = "$(field digest "$ours")" ] || same="DIFFERENT"
		if [ "$node_ok" = 1 ]; then
			js=$(node testdata/peers/jsonld-canon.mjs "$doc" --bench)
			row "$n" "jsonld.js 9.0.0" "$js"
			[ "$(field sha256 "$js")" = "$(field digest "$ours")" ] || same="DIFFERENT"
		else
			echo "$n jsonld.js: skipped (run 'make peers')"
		fi
		echo "$n canonical N-Quads of witness, json-gold and jsonld.js: $same"
	fi
done
echo "(events/s counts the events of the log; the peers canonicalise the JSON-LD of the same graph; machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
