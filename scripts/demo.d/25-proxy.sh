# Part 25: proxy and serve. A scripted host (a bash coprocess that writes a
# JSON-RPC line and reads the answer) runs a bundled MCP server (built with
# the official Go SDK) behind `witness proxy`, which records the session;
# then `witness serve` answers the same requests from the cassette.
echo
echo "== 25 proxy: record what a host and a server say; serve it back =="
[ -x "$DEMO/gosdk-server" ] || go build -o "$DEMO/gosdk-server" "$REPO/testdata/servers/gosdk"
[ -f "$WITNESS_KEYRING" ] || "$WITNESS" key generate >/dev/null
cat > "$DEMO/proxy-host.jsonl" <<'JSON'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo-host","version":"1.0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}
{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}
{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"CURSOR"}}
{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"CURSOR"}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"greet","arguments":{"name":"proxy"}}}
{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"delete_file","arguments":{"path":"/srv/data/old.csv"}}}
JSON
# demo_host OUT CMD...: plays proxy-host.jsonl against CMD one line at a
# time, waiting for each answer (following nextCursor); the answers go to
# OUT, CMD's stderr to OUT.stderr.
demo_host() {
	local out=$1
	shift
	: >"$out"
	coproc HOST { "$@" 2>"$out.stderr"; }
	local line reply cursor=""
	while IFS= read -r line; do
		if [[ $line == *CURSOR* ]]; then
			[ -n "$cursor" ] || continue
			line=${line/CURSOR/$cursor}
		fi
		printf '%s\n' "$line" >&"${HOST[1]}"
		[[ $line == *'"id"'* ]] || continue
		IFS= read -r reply <&"${HOST[0]}"
		cursor=$(sed -nE 's/.*"nextCursor":"([^"]*)".*/\1/p' <<<"$reply")
		printf '%s\n' "$reply" >>"$out"
	done <proxy-host.jsonl
	exec {HOST[1]}>&-
	wait "$HOST_PID"
}
cat > "$DEMO/proxy-spec.json" <<'JSON'
{"system_prompt": "You are a careful assistant.", "witness_id": "witness-demo-proxy",
 "tools": [{"name": "greet", "scopes": []}, {"name": "delete_file", "scopes": []}]}
JSON
(
	cd "$DEMO"
	"$WITNESS" seal --spec proxy-spec.json --out proxy-seal.json >/dev/null
	echo "\$ witness proxy --out proxied --seal proxy-seal.json --keyring \$WITNESS_KEYRING -- ./gosdk-server   (the host's server command)"
	demo_host proxied.out "$WITNESS" proxy --out proxied --seal proxy-seal.json --keyring "$WITNESS_KEYRING" -- ./gosdk-server
	cut -c1-110 proxied.out | sed 's/^/  < /'
	echo "  (the server's stderr, passed through: $(cat proxied.out.stderr))"
	echo
	echo "proxied/events.jsonl: kind and tool of each event, the effect, the signed end:"
	sed -E 's/.*"id":"(e[0-9]+)".*"kind":"([a-z_]+)".*/\1 \2/' proxied/events.jsonl | paste -sd' '
	grep -o '"effect":{[^}]*}' proxied/events.jsonl | sed 's/^/  /'
	grep -o '"reason":"[^"]*","signatures":\[{"alg":"[^"]*"' proxied/events.jsonl | sed 's/^/  /'
	echo "\$ witness verify --seal proxy-seal.json --events proxied/events.jsonl"
	set +e
	"$WITNESS" verify --seal proxy-seal.json --events proxied/events.jsonl 2>&1 | grep -E '^verdict' | cut -c1-140
	sed 's/Hi proxy/Hi proxx/' proxied/events.jsonl >proxied-edited.jsonl
	echo "\$ witness verify --seal proxy-seal.json --events proxied-edited.jsonl   (one byte edited: \"Hi proxy\" -> \"Hi proxx\")"
	"$WITNESS" verify --seal proxy-seal.json --events proxied-edited.jsonl 2>&1 | grep -E 'error: log-|^verdict' | cut -c1-140
	set -e
	echo
	echo "\$ witness serve --cassette proxied/cassette.jsonl   (same host, no server process)"
	demo_host served.out "$WITNESS" serve --cassette proxied/cassette.jsonl
	if cmp -s proxied.out served.out; then
		echo "  the host got the same $(wc -l <served.out) answers, byte for byte"
	else
		diff proxied.out served.out | cut -c1-110
	fi
	echo
	echo "a request the recording does not cover:"
	echo "\$ echo '{... \"name\":\"greet\",\"arguments\":{\"name\":\"someone else\"} ...}' | witness serve --cassette proxied/cassette.jsonl"
	set +e
	echo '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"greet","arguments":{"name":"someone else"}}}' |
		"$WITNESS" serve --cassette proxied/cassette.jsonl 2>&1 | grep -v 'not asked for' | cut -c1-130
	echo "exit status ${PIPESTATUS[1]}: the recording does not cover the run"
	set -e
)
