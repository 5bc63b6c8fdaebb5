# Part 30: graph. The captured session of part 20 as a canonical W3C PROV
# graph: JSON-LD with an embedded context, RDFC-1.0 canonical N-Quads and
# their digest, and a picture (SVG when Graphviz is installed).
echo
echo "== 30 graph: the captured session as a PROV-DM causal graph =="
(
	cd "$DEMO"
	echo "\$ witness graph --events rec/events.jsonl --seal capture-seal.json --out graph.jsonld"
	"$WITNESS" graph --events rec/events.jsonl --seal capture-seal.json --out graph.jsonld 2>&1
	echo
	echo "JSON-LD (canonical JSON, @graph sorted by @id; the delete_file call, cut at 110 characters a line):"
	grep -o '{"@id":"urn:witness:[^"]*/call/e[0-9]*","@type":\["prov:Activity","witness:ToolCall"\],[^{]*"otel:gen_ai.tool.name":"delete_file"[^]]*\]' graph.jsonld |
		head -1 | sed -E 's/,"(prov|otel|witness|@type)/,\n  "\1/g' | cut -c1-110
	echo
	echo "\$ witness graph --events rec/events.jsonl --seal capture-seal.json --format nquads --out graph.nq"
	"$WITNESS" graph --events rec/events.jsonl --seal capture-seal.json --format nquads --out graph.nq 2>&1
	echo "$(wc -l <graph.nq) quads; sha256sum graph.nq: $(sha256sum graph.nq | cut -d' ' -f1) (the graph digest)"
	echo "the result of the failed call, as N-Quads (cut at 150 characters):"
	err=$(grep -o '<urn:witness:[^>]*/result/e[0-9]*> <https://w3id.org/agent-trace-witness/ns#isError> "true"' graph.nq | head -1 | cut -d' ' -f1)
	grep -F "$err " graph.nq | grep -v 'prov#value' | cut -c1-150 | sed 's/^/  /'
	echo
	# findings colour the picture; here the failed call's result
	ev=$(grep -F "$err <https://w3id.org/agent-trace-witness/ns#eventId>" graph.nq | sed -E 's/.*"(e[0-9]+)" \.$/\1/')
	printf '{"%s": "warning"}\n' "$ev" >graph-classes.json
	echo "\$ witness graph --events rec/events.jsonl --seal capture-seal.json --format dot --classes graph-classes.json --out graph.dot"
	"$WITNESS" graph --events rec/events.jsonl --seal capture-seal.json --format dot --classes graph-classes.json --out graph.dot 2>&1
	echo "$(grep -c 'shape=box' graph.dot) activities (boxes), $(grep -c 'shape=ellipse' graph.dot) entities (ellipses), $(grep -c 'shape=house' graph.dot) agents (houses, drawn once), $(grep -c -- '->' graph.dot) edges"
	if command -v dot >/dev/null; then
		dot -Tsvg graph.dot -o graph.svg
		echo "rendered graph.svg ($(wc -c <graph.svg) bytes) with $(dot -V 2>&1)"
	else
		echo "Graphviz is not installed, so no SVG; install it with: sudo apt-get install graphviz"
		echo "then: dot -Tsvg graph.dot -o graph.svg"
	fi
)
