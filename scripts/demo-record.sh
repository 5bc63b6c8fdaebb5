#!/usr/bin/env bash
# `make demo-record`: re-records the agent story that `make demo` (part 60)
# analyses offline. It runs the real-agent suite's capture test once per
# framework (internal/agente2e: @openai/agents and the Anthropic SDK's
# tool runner, the scripted model server, server-filesystem over stdio and
# server-everything over Streamable HTTP, every channel through `witness
# proxy`) with the time frozen, and keeps each framework's three logs, the
# story's seal spec and the public half of the signing key in
# testdata/demo/agent/. Needs Go, node and the npm peers (make peers); the
# work directory is /tmp/witness-agent-demo (its path is in the logs).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/testdata/demo/agent"
new="$out.new"
rm -rf "$new"
mkdir -p "$new"
ATW_AGENT_RECORD="$new" ATW_AGENT_ROOT=/tmp/witness-agent-demo CI=true \
	go test ./internal/agente2e -run 'TestAgentCapture$' -count=1
rm -rf "$out"
mv "$new" "$out"
echo "recorded: $(cd "$out" && find . -type f | sort | tr '\n' ' ')"
