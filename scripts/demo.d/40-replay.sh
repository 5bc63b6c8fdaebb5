# Part 40: replay. Counterfactuals on the graph of the session captured in
# part 20: what if the delete_file call had not happened? What goes with it,
# what could not be undone, what still stands, and how verify's verdict and
# findings change; then every action ranked by blast radius; then 0.1.0's
# HANSARD log, where removing delete_file resolves the unsealed-tool finding.
echo
echo "== 40 replay: what if the delete_file call had not happened? =="
(
	cd "$DEMO"
	"$WITNESS" graph --events rec/events.jsonl --out replay-graph.jsonld 2>/dev/null
	del=$(grep '"kind":"tool_call"' rec/events.jsonl | grep '"tool":"delete_file"' | sed -E 's/.*"id":"(e[0-9]+)".*/\1/' | head -n 1)
	echo "\$ witness replay --graph replay-graph.jsonld --remove $del --seal capture-seal.json --format text   # $del: the delete_file call"
	"$WITNESS" replay --graph replay-graph.jsonld --remove "$del" --seal capture-seal.json --format text | sed -E 's#urn:witness:[^/ ]+/#…/#g'
	echo
	echo "\$ witness replay --graph replay-graph.jsonld --rank --format text"
	"$WITNESS" replay --graph replay-graph.jsonld --rank --format text | sed -E 's#urn:witness:[^/ ]+/#…/#g'
	echo
	"$WITNESS" replay --graph replay-graph.jsonld --remove "$del" --format dot --out replay.dot
	echo "\$ witness replay --graph replay-graph.jsonld --remove $del --format dot --out replay.dot"
	echo "  compensation set drawn: $(grep -c 'tooltip="removed"' replay.dot) node(s) grey and dashed, $(grep -c 'tooltip="not-replayable"' replay.dot) magenta (not replayable); render with: dot -Tsvg replay.dot"
	echo
	[ -f hansard.jsonl ] || {
		cp "$REPO/testdata/compat/atw-0.1.0/hansard_scenario_1.jsonl" "$REPO/testdata/compat/atw-0.1.0/seal_without_damaging_tool.json" .
		"$WITNESS" import --from atw-0.1.0 hansard_scenario_1.jsonl --out hansard.jsonl >/dev/null 2>&1
	}
	"$WITNESS" graph --events hansard.jsonl --out hansard-graph.jsonld 2>/dev/null
	echo "\$ ATW_WITNESS_KEY=<32 zero bytes> witness replay --graph hansard-graph.jsonld --remove e4 --seal seal_without_damaging_tool.json --format text   # 0.1.0's HANSARD, e4: delete_file"
	ATW_WITNESS_KEY=0000000000000000000000000000000000000000000000000000000000000000 \
		"$WITNESS" replay --graph hansard-graph.jsonld --remove e4 --seal seal_without_damaging_tool.json --format text |
		sed -E 's#urn:witness:[^/ ]+/#…/#g' | grep -v ' notice ' | cut -c1-190
	echo "(0.1.0 removed list_dir's response here and kept delete_file's; the seal_ref mismatch of the 0.1.0 fixture remains)"
)
