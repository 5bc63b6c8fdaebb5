# Part 50: firewall forensics. A message-policy file and its installation
# digest, the built-in rules re-run offline over bundled captured messages,
# the audit snapshot they write, and that snapshot verified whole and cut.
echo
echo "== 50 firewall: message-policy files, offline re-evaluation, audit snapshots =="
(
	cd "$DEMO"
	cp "$REPO/testdata/firewall/policy-code.json" "$REPO/testdata/firewall/policy.json" \
		"$REPO/testdata/firewall/messages.events.jsonl" "$REPO/testdata/firewall/judgments.audit.ndjson" \
		"$REPO/testdata/firewall/toolcalls.events.jsonl" "$REPO/testdata/firewall/mapping.json" .
	echo "\$ witness firewall policy check policy-code.json"
	"$WITNESS" firewall policy check policy-code.json
	echo
	echo "\$ witness firewall evaluate --policy policy-code.json --events messages.events.jsonl --out \$PWD/audit.ndjson   # an audit snapshot goes to an absolute path"
	"$WITNESS" firewall evaluate --policy policy-code.json --events messages.events.jsonl --out "$PWD/audit.ndjson" | cut -c1-110
	echo
	echo "\$ witness firewall audit verify audit.ndjson"
	"$WITNESS" firewall audit verify audit.ndjson
	head -c 4000 audit.ndjson > truncated.ndjson
	echo "\$ witness firewall audit verify truncated.ndjson   # the first 4000 bytes"
	set +e
	"$WITNESS" firewall audit verify truncated.ndjson
	echo "exit $? (incomplete evidence)"
	set -e
	echo
	echo "English rules need a decision provider; offline, the recorded one answers from an earlier snapshot:"
	echo "\$ witness firewall evaluate --policy policy.json --events messages.events.jsonl --recorded judgments.audit.ndjson"
	"$WITNESS" firewall evaluate --policy policy.json --events messages.events.jsonl --recorded judgments.audit.ndjson \
		| grep -E '^(e9|e10|e13|e14|e16|e17) ' | cut -c1-120
	echo
	echo "messages derived from MCP tool calls by a mapping file:"
	echo "\$ witness firewall derive --events toolcalls.events.jsonl --mapping mapping.json --out derived.jsonl"
	"$WITNESS" firewall derive --events toolcalls.events.jsonl --mapping mapping.json --out derived.jsonl
	"$WITNESS" firewall evaluate --policy policy-code.json --events derived.jsonl | grep -E '^e(7|8|9|10) ' | cut -c1-110
	echo
	echo "the checks on the graph, and what the code-only policy would have stopped:"
	echo "\$ witness graph --events messages.events.jsonl --firewall-audit judgments.audit.ndjson --out fw-graph.jsonld"
	"$WITNESS" graph --events messages.events.jsonl --firewall-audit judgments.audit.ndjson --out fw-graph.jsonld 2>&1
	"$WITNESS" graph --events messages.events.jsonl --out fw-plain.jsonld 2>/dev/null
	echo "\$ witness replay --graph fw-plain.jsonld --what-if-policy policy-code.json --format text"
	"$WITNESS" replay --graph fw-plain.jsonld --what-if-policy policy-code.json --format text | grep -E '^(remove|compensation)|firewall .*(withheld|refused)'
)
