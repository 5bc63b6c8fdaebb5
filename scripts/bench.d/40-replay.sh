#!/usr/bin/env bash
# Replay at scale: one removal (the definition of the busiest tool, a large
# compensation set) and a full --rank on deterministic generated graphs
# (internal/synthlog NewGraph). Two tables:
#   engine: the graph built in memory, replay timed in-process (index, one
#           removal, full ranking) with the process's peak RSS;
#   cli:    `witness replay` end to end on a graph file (reading the JSON-LD
#           included), wall time and peak RSS from /usr/bin/time.
# Sizes: WITNESS_BENCH_REPLAY_SIZES (default 10000 100000 1000000) and
# WITNESS_BENCH_REPLAY_CLI_SIZES (default 10000 100000: the JSON-LD reader,
# not replay, dominates beyond).
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes="${WITNESS_BENCH_REPLAY_SIZES:-10000 100000 1000000}"
cli_sizes="${WITNESS_BENCH_REPLAY_CLI_SIZES:-10000 100000}"
work="$(mktemp -d "${TMPDIR:-/tmp}/witness-bench-replay.XXXXXX")"
trap 'rm -rf "$work"' EXIT
go build -o "$work/gengraph" ./replay/internal/gengraph
witness="${WITNESS:-$PWD/bin/witness}"
[ -x "$witness" ] || go build -o "$witness" ./cmd/witness

echo "engine (graph in memory; seconds; peak RSS in MiB, graph included)"
printf '%-9s %-8s %-8s %-10s %-10s %-8s %-16s %-10s %-10s\n' nodes actions index_s remove_s removed rank_s rank_method rss_graph rss_peak
for n in $sizes; do
	"$work/gengraph" -nodes "$n" -measure | while IFS=$'\t' read -r nodes acts idx rm removed rank method rssg rssp; do
		printf '%-9s %-8s %-8s %-10s %-10s %-8s %-16s %-10s %-10s\n' "$nodes" "$acts" "$idx" "$rm" "$removed" "$rank" "$method" "$rssg" "$rssp"
	done
done

echo
echo "cli (witness replay on a JSON-LD file; wall seconds; peak RSS in MiB)"
printf '%-9s %-10s %-10s %-10s %-10s %-10s\n' nodes file_MiB remove_s remove_rss rank_s rank_rss
timed() { # prints "seconds rss_mib" of the command
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null
		awk '{printf "%s %.0f\n", $1, $2/1024}' "$work/time"
	else
		local s e
		s=$(date +%s.%N)
		"$@" >/dev/null
		e=$(date +%s.%N)
		awk -v s="$s" -v e="$e" 'BEGIN{printf "%.2f n/a\n", e-s}'
	fi
}
for n in $cli_sizes; do
	g="$work/g$n.jsonld"
	"$work/gengraph" -nodes "$n" -out "$g" 2>/dev/null
	mib=$(awk -v b="$(wc -c <"$g")" 'BEGIN{printf "%.1f", b/1048576}')
	read -r rs rr < <(timed "$witness" replay --graph "$g" --remove urn:witness:bench/tool/read_file)
	read -r ks kr < <(timed "$witness" replay --graph "$g" --rank --top 10)
	printf '%-9s %-10s %-10s %-10s %-10s %-10s\n' "$n" "$mib" "$rs" "$rr" "$ks" "$kr"
	rm -f "$g"
done
