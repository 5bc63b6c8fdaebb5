# Part 32: sampling. A tool call of the reference MCP server (server-everything,
# an npm peer) makes the server ask the host to sample its model
# (sampling/createMessage); the capture scenario answers with a fixed assistant
# message. The exchange is a model turn in the event log and in the graph, and
# verify judges it against a seal that forbids sampling (violation) and one
# that allows it (verified). Skipped when node or the npm peers are missing.
# Every "$ ..." line is the exact command that runs (witness is $WITNESS), so
# the "Sampling" block of docs/guide/graph.md is this part's output.
echo
echo "== 32 sampling: a model turn seen on the wire =="
if ! command -v node >/dev/null || [ ! -f "$REPO/testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]; then
	echo "skipped: needs node and the npm peers (run: make peers)"
else
	[ -f "$WITNESS_KEYRING" ] || "$WITNESS" key generate >/dev/null
	(
		cd "$DEMO"
		ln -sfn "$REPO/testdata" testdata # so the commands below read as from the repository root
		witness() { "$WITNESS" "$@"; }
		show() {
			printf '$ %s\n' "$1"
			eval "$1"
		}
		set +e
		show 'mkdir sampling && cp testdata/demo/sampling/*.json sampling/ && cd sampling'
		show 'ln -s ../testdata/peers/node_modules/@modelcontextprotocol/server-everything .'
		show 'cat scenario.json agent.json'
		show 'sed '\''s/"sampling": false/"sampling": true/'\'' agent.json >agent-allow.json'
		show 'witness seal --spec agent.json --out seal-forbid.json >/dev/null'
		show 'witness seal --spec agent-allow.json --out seal-allow.json >/dev/null'
		show 'witness capture --out rec --scenario scenario.json -- node server-everything/dist/index.js stdio'
		show 'grep sampling/createMessage rec/events.jsonl | sed -E '\''s/"payload":.*"prev":"[0-9a-f]*",//; s/"seq".*"source"/"source"/; s/,"ts".*/}/'\'''
		show 'grep sampling/createMessage rec/events.jsonl | sed -E '\''s/.*"payload":(.*),"payload_sha256".*/\1/'\'''
		show 'witness graph --events rec/events.jsonl 2>/dev/null | grep -o '\''"@id":"[^"]*/turn/e12","@type":\[[^]]*\]'\'''
		show 'witness graph --events rec/events.jsonl --format dot 2>/dev/null | awk -F'\''"'\'' '\''/label=/ && !/->/ {split($0, w, " "); s = $2; gsub(/\\n/, " ", s); n[w[1]] = s} /->/ {split($0, w, " "); e = n[w[1]] " -" $2 "-> " n[w[3]]; if (e ~ /sampling (request|answer|turn)/) print e}'\'''
		show 'witness verify --seal seal-forbid.json --events rec/events.jsonl | grep -E '\''sampling|^verdict'\'''
		show 'witness verify --seal seal-allow.json --events rec/events.jsonl | grep -E '\''sampling|^verdict'\'''
		set -e
	)
fi
