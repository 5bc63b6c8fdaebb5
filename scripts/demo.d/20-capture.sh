# Part 20: capture. A scripted session against a bundled MCP server (built
# with the official Go SDK), its byte-exact cassette, its event log, and a
# one-byte edit of that log being detected.
echo
echo "== 20 capture: record a live MCP session =="
go build -o "$DEMO/gosdk-server" "$REPO/testdata/servers/gosdk"
[ -f "$WITNESS_KEYRING" ] || "$WITNESS" key generate >/dev/null
cat > "$DEMO/capture-calls.json" <<'JSON'
[
  {"tool": "greet", "arguments": {"name": "witness"}},
  {"tool": "add", "arguments": {"a": 1.5, "b": 2}},
  {"tool": "fail", "arguments": {"why": "demo"}},
  {"tool": "delete_file", "arguments": {"path": "/srv/data/report.csv"}}
]
JSON
cat > "$DEMO/capture-spec.json" <<'JSON'
{"system_prompt": "You are a careful assistant.", "witness_id": "witness-demo-capture",
 "tools": [{"name": "greet", "scopes": []}, {"name": "add", "scopes": []},
           {"name": "fail", "scopes": []}, {"name": "delete_file", "scopes": []}]}
JSON
(
	cd "$DEMO"
	"$WITNESS" seal --spec capture-spec.json --out capture-seal.json >/dev/null
	echo "\$ witness capture --out rec --scenario capture-calls.json --seal capture-seal.json -- ./gosdk-server"
	"$WITNESS" capture --out rec --scenario capture-calls.json --seal capture-seal.json -- ./gosdk-server
	echo
	echo "cassette (every wire line, exact bytes; first 6 records, cut at 150 characters):"
	sed -n 2,7p rec/cassette.jsonl | cut -c1-150
	echo
	echo "events (id and kind), then each response's call link and the external effect:"
	sed -E 's/.*"id":"(e[0-9]+)".*"kind":"([a-z_]+)".*/\1 \2/' rec/events.jsonl | paste -sd' ' | fold -w 110 -s
	grep -o '"call":"e[0-9]*","id":"e[0-9]*","is_error":[a-z]*,"kind":"tool_response"' rec/events.jsonl | sed 's/^/  /'
	grep -o '"effect":{[^}]*}' rec/events.jsonl | sed 's/^/  external_effect /'
	echo
	echo "one byte edited in the event log (\"demo\" -> \"deme\" in a tool result):"
	cp rec/events.jsonl edited-events.jsonl
	sed -i '0,/failed on purpose: demo/s//failed on purpose: deme/' edited-events.jsonl
	cmp rec/events.jsonl edited-events.jsonl | sed 's/^/  /' || true
	echo "\$ witness verify --seal capture-seal.json --events edited-events.jsonl"
	set +e
	"$WITNESS" verify --seal capture-seal.json --events edited-events.jsonl 2>&1 | grep -E 'error: log-|^verdict' | cut -c1-160
	set -e
)
