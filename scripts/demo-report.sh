#!/usr/bin/env bash
# `make demo`, last block (issue 16): the incident report of the demo's
# story. The capture of part 20 (greet, add, a failing call, delete_file
# with its external effect) judged against a seal that leaves delete_file
# out, written as one self-contained HTML page that outlives the demo's
# temporary folder. Prints the path to open.
set -euo pipefail
cd "$(dirname "$0")/.."
WITNESS="$PWD/bin/witness"
out="$PWD/bin/demo-report"
rm -rf "$out"
mkdir -p "$out"
export ATW_WITNESS_TS="2026-08-30T14:33:00+00:00"
export WITNESS_KEYRING="$out/keys.json"
go build -o "$out/gosdk-server" ./testdata/servers/gosdk
cat > "$out/calls.json" <<'JSON'
[
  {"tool": "greet", "arguments": {"name": "witness"}},
  {"tool": "add", "arguments": {"a": 1.5, "b": 2}},
  {"tool": "fail", "arguments": {"why": "demo"}},
  {"tool": "delete_file", "arguments": {"path": "/srv/data/report.csv"}}
]
JSON
cat > "$out/spec.json" <<'JSON'
{"system_prompt": "You are a careful assistant.", "witness_id": "witness-demo-report",
 "tools": [{"name": "greet", "scopes": []}, {"name": "add", "scopes": []}, {"name": "fail", "scopes": []}]}
JSON
echo
echo "== report: the incident report of the story =="
(
	cd "$out"
	"$WITNESS" keygen --alg ed25519 >/dev/null
	"$WITNESS" seal --spec spec.json --out seal.json >/dev/null
	"$WITNESS" capture --out rec --scenario calls.json --seal seal.json -- ./gosdk-server >/dev/null 2>&1
	echo "\$ witness report --events rec/events.jsonl --seal seal.json --out report.html"
	"$WITNESS" report --events rec/events.jsonl --seal seal.json --out report.html
)
echo "open it: $out/report.html"
