#!/usr/bin/env bash
# `make demo`, last block (issue 16): the incident reports of the demo's
# stories, each one self-contained HTML page that outlives the demo's
# temporary folder. First the capture of part 20 (greet, add, a failing
# call, delete_file with its external effect) judged against a seal that
# leaves delete_file out; then the agent story of part 60 (testdata/demo/
# agent, the openai-agents run): its three logs judged as one run against
# the seal of agent.json, the injection-provenance finding's chain drawn
# back to the poisoned read. Prints the paths to open.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_DIR="$PWD"
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
	"$WITNESS" key generate >/dev/null
	"$WITNESS" seal --spec spec.json --out seal.json >/dev/null
	"$WITNESS" capture --out rec --scenario calls.json --seal seal.json -- ./gosdk-server >/dev/null 2>&1
	echo "\$ witness report --events rec/events.jsonl --seal seal.json --out report.html"
	"$WITNESS" report --events rec/events.jsonl --seal seal.json --out report.html
)
echo
echo "== report: the incident report of the agent story (part 60) =="
(
	cd "$out"
	rm -rf agent
	cp -R "$REPO_DIR/testdata/demo/agent" agent
	cd agent
	"$WITNESS" seal --spec agent.json --out agent-seal.json >/dev/null
	logs=(--events openai-agents/model/events.jsonl --events openai-agents/fs/events.jsonl --events openai-agents/everything/events.jsonl)
	echo "\$ witness report --events openai-agents/model/events.jsonl --events openai-agents/fs/events.jsonl --events openai-agents/everything/events.jsonl --seal agent-seal.json --trust trust.json --out report.html"
	"$WITNESS" report "${logs[@]}" --seal agent-seal.json --trust trust.json --out report.html
)
echo "open it: $out/report.html"
echo "open it: $out/agent/report.html (the agent story: click the injection-provenance finding's \"show chain\")"
