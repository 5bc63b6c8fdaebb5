#!/usr/bin/env bash
# replay.sh: the steps of the example CI job (docs/ci.md). The GitHub
# Actions workflow and the GitLab CI job only install things, call this
# script and upload what it leaves in $OUT; cmd/witness's TestCIExample
# runs this same script, so the examples cannot rot.
#
#   replay.sh record   refresh the cassettes: run the agent's tests once
#                      against the real peers through `witness proxy`
#   replay.sh replay   run the agent's tests against `witness serve`, then
#                      `witness drift` and `witness verify`
#
# Settings (environment; every witness option is passed as a flag):
#   WITNESS          the witness binary (default: witness)
#   AGENT_NODE       node for the agent's tests (default: node)
#   AGENT_TEST       the agent's test suite (default: agent-test.cjs here)
#   FIXTURES         cassettes directory (default: fixtures)
#   OUT              reports directory, cleared by replay (default: out)
#   WITNESS_KEYRING  keyring file that signs the recorded log (record) and
#                    checks it (replay)
#   WITNESS_KEYRING_JSON  the keyring itself, from a CI secret: written to
#                    $WITNESS_KEYRING with mode 0600 whatever the umask
#                    (witness refuses a keyring others can read) unless
#                    that file exists; empty where the job gets no secrets
#                    (a pull request from a fork)
#   WITNESS_TRUST    trust file of the keyring's public keys (witness key
#                    export-public), checked in: replay checks the log and
#                    the seal with it when there is no keyring (default:
#                    witness-trust.json when it exists)
#   SEAL             the agent's signed seal (witness seal): the recording
#                    is bound to it and verify judges it against it;
#                    unset: verify checks integrity only
#   record only:
#   MCP_SERVER       the MCP server command line (stdio), e.g. "node server.js"
#   MODEL_UPSTREAM   the model API base URL (e.g. https://api.openai.com)
#
# Exit status: the first failure of: drift (1), an HTTP serve's status
# (4: a request missed), the agent's tests, verify; else 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
WITNESS=${WITNESS:-witness}
AGENT_NODE=${AGENT_NODE:-node}
AGENT_TEST=${AGENT_TEST:-$here/agent-test.cjs}
FIXTURES=${FIXTURES:-fixtures}
OUT=${OUT:-out}
pids=()

die() { echo "replay.sh: $*" >&2; exit 5; }

# start_listener LOG CMD...: runs CMD in the background, waits for its
# "listening on URL" line on stderr (LOG), and sets $url and $pid.
start_listener() {
	local log=$1; shift
	"$@" 2> "$log" &
	pid=$!
	pids+=("$pid")
	url=
	for _ in $(seq 1 600); do
		url=$(sed -n 's/^listening on \(http[^ ]*\).*$/\1/p' "$log" | head -n 1)
		[ -n "$url" ] && return 0
		kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$1 exited before listening"; }
		sleep 0.1
	done
	die "$1 did not say it was listening"
}

# stop PID: SIGTERM, then the exit status in $status.
stop() {
	kill -TERM "$1" 2>/dev/null
	wait "$1"
	status=$?
}

trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done' EXIT

# the keyring from the secret, readable by its owner only
if [ -n "${WITNESS_KEYRING:-}" ] && [ -n "${WITNESS_KEYRING_JSON:-}" ] && [ ! -e "$WITNESS_KEYRING" ]; then
	(umask 077 && printf '%s' "$WITNESS_KEYRING_JSON" > "$WITNESS_KEYRING") || die "cannot write the keyring to $WITNESS_KEYRING"
fi
have_keyring() { [ -n "${WITNESS_KEYRING:-}" ] && [ -f "$WITNESS_KEYRING" ]; }
WITNESS_TRUST=${WITNESS_TRUST:-}
[ -z "$WITNESS_TRUST" ] && [ -f witness-trust.json ] && WITNESS_TRUST=witness-trust.json

case "${1:-}" in
record)
	[ -n "${MCP_SERVER:-}" ] || die "set MCP_SERVER to the MCP server command line"
	[ -n "${MODEL_UPSTREAM:-}" ] || die "set MODEL_UPSTREAM to the model API base URL"
	keyring=() # and the seal
	have_keyring || die "no keyring: set WITNESS_KEYRING_JSON (the secret) or WITNESS_KEYRING to a keyring file; a recording is signed so that replay can check it"
	keyring=(--keyring "$WITNESS_KEYRING")
	[ -n "${SEAL:-}" ] && keyring+=(--seal "$SEAL")
	rm -rf "$FIXTURES/model" "$FIXTURES/mcp"
	mkdir -p "$FIXTURES"
	start_listener "$FIXTURES/model-proxy.log" "$WITNESS" proxy --out "$FIXTURES/model" --listen 127.0.0.1:0 --upstream "$MODEL_UPSTREAM"
	model=$pid
	# shellcheck disable=SC2086 # MCP_SERVER is a command line
	MODEL_URL=$url "$AGENT_NODE" "$AGENT_TEST" -- "$WITNESS" proxy --out "$FIXTURES/mcp" "${keyring[@]}" -- $MCP_SERVER
	agent=$?
	stop "$model"
	rm -f "$FIXTURES/model-proxy.log"
	[ "$agent" -eq 0 ] || die "the agent's tests failed against the real peers (exit $agent): nothing recorded worth keeping"
	[ "$status" -eq 0 ] || die "witness proxy (model API) exited $status"
	echo "recorded $FIXTURES/mcp/cassette.jsonl and $FIXTURES/model/cassette.jsonl"
	;;
replay)
	rm -rf "$OUT"
	mkdir -p "$OUT"
	mcp=$FIXTURES/mcp/cassette.jsonl
	# the model API, and the MCP server over Streamable HTTP (the stdio
	# cassette, served on another transport); --require-all: a recorded
	# exchange never asked for makes serve exit 4 too
	start_listener "$OUT/serve-model.log" "$WITNESS" serve --cassette "$FIXTURES/model/cassette.jsonl" --listen 127.0.0.1:0 --require-all --report "$OUT/drift-model.jsonl"
	model=$pid model_url=$url
	start_listener "$OUT/serve-mcp-http.log" "$WITNESS" serve --cassette "$mcp" --listen 127.0.0.1:0 --require-all --report "$OUT/drift-mcp-http.jsonl"
	mcphttp=$pid mcp_url=$url/mcp
	# the MCP server over stdio: serve is the host's server command and
	# writes a drift report whatever the host does with its exit status
	MODEL_URL=$model_url MCP_URL=$mcp_url "$AGENT_NODE" "$AGENT_TEST" -- \
		"$WITNESS" serve --cassette "$mcp" --report "$OUT/drift-mcp-stdio.jsonl" | tee "$OUT/agent-test.txt"
	agent=${PIPESTATUS[0]}
	stop "$model"; model_status=$status
	stop "$mcphttp"; mcphttp_status=$status
	pids=()
	"$WITNESS" drift "$OUT"/drift-*.jsonl --junit "$OUT/drift.xml"
	drift=$?
	# the keyring, else the checked-in trust file (a fork's pull request
	# has no secret), else integrity only: the seal needs a key to check
	verify_keys=()
	have_keyring && verify_keys+=(--keyring "$WITNESS_KEYRING")
	[ -n "$WITNESS_TRUST" ] && verify_keys+=(--trust "$WITNESS_TRUST")
	if [ "${#verify_keys[@]}" -eq 0 ]; then
		echo "replay.sh: no keyring and no trust file (a pull request from a fork gets no secrets; check in witness-trust.json from 'witness key export-public'): verify checks integrity only" >&2
		verify_keys=(--allow-unsigned)
	elif [ -n "${SEAL:-}" ]; then
		verify_keys+=(--seal "$SEAL")
	fi
	"$WITNESS" verify --events "$FIXTURES/mcp/events.jsonl" "${verify_keys[@]}" --junit --out "$OUT/verify.xml"
	verify=$?
	"$WITNESS" verify --events "$FIXTURES/mcp/events.jsonl" "${verify_keys[@]}" --sarif --out "$OUT/verify.sarif" > /dev/null
	echo "agent tests: exit $agent; serve (model API): exit $model_status; serve (MCP over HTTP): exit $mcphttp_status; drift: exit $drift; verify: exit $verify"
	for s in "$drift" "$model_status" "$mcphttp_status" "$agent" "$verify"; do
		[ "$s" -eq 0 ] || exit "$s"
	done
	;;
*)
	echo "usage: replay.sh record|replay" >&2
	exit 2
	;;
esac
