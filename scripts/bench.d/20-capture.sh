#!/usr/bin/env bash
# Capture: wall time of a whole `witness capture` session (spawn, initialize,
# every tools/list page, 3 tool calls, shutdown, cassette + unsigned event
# log) per server, 5 runs each; min / median / max in milliseconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
W="$PWD/bin/witness"
[ -x "$W" ] || go build -o "$W" ./cmd/witness
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gosdk" ./testdata/servers/gosdk
cat >"$tmp/gosdk.json" <<'JSON'
[{"tool":"greet","arguments":{"name":"b"}},{"tool":"add","arguments":{"a":1,"b":2}},{"tool":"fail","arguments":{}}]
JSON
cat >"$tmp/everything.json" <<'JSON'
[{"tool":"echo","arguments":{"message":"b"}},{"tool":"get-sum","arguments":{"a":1,"b":2}},{"tool":"nope","arguments":{}}]
JSON
ev=testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js
run() { # name scenario cmd...
	local name=$1 scen=$2
	shift 2
	local times=()
	for i in 1 2 3 4 5; do
		local s e
		s=$(date +%s%N)
		ATW_WITNESS_TS=2026-08-30T14:33:00+00:00 WITNESS_KEYRING=/nonexistent "$W" capture --out "$tmp/out-$name-$i" --scenario "$scen" -- "$@" >/dev/null 2>&1
		e=$(date +%s%N)
		times+=($(((e - s) / 1000000)))
	done
	local sorted
	sorted=$(printf '%s\n' "${times[@]}" | sort -n | paste -sd' ')
	read -r -a a <<<"$sorted"
	local recs events
	recs=$(($(wc -l <"$tmp/out-$name-1/cassette.jsonl") - 1))
	events=$(wc -l <"$tmp/out-$name-1/events.jsonl")
	printf '%-22s %7s %10s %7s %8s %7s\n' "$name" "${a[0]}" "${a[2]}" "${a[4]}" "$recs" "$events"
}
printf '%-22s %7s %10s %7s %8s %7s\n' server min_ms median_ms max_ms records events
run go-sdk-fixture "$tmp/gosdk.json" "$tmp/gosdk"
if [ -f "$ev" ] && command -v node >/dev/null; then
	run server-everything "$tmp/everything.json" node "$ev" stdio
else
	echo "server-everything      (npm peers not installed: make peers)"
fi
