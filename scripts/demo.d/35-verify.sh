# Part 35: verify. The session captured in part 20 judged against its seal:
# the clean capture verifies (exit 0); the copy with one byte edited is
# tampered (exit 3); the same capture cut before its signed end is
# incomplete (exit 4); its graph alone is unauthenticated (exit 4: a graph
# carries no chain), and checked against the log it verifies; and
# agent-trace-witness 0.1.0's HANSARD fixture is a violation (exit 1),
# imported, not observed.
echo
echo "== 35 verify: the evidence against the seal, one verdict =="
(
	cd "$DEMO"
	set +e
	echo "\$ witness verify --seal capture-seal.json --events rec/events.jsonl"
	"$WITNESS" verify --seal capture-seal.json --events rec/events.jsonl
	echo "exit code: $?"
	echo
	echo "\$ witness verify --seal capture-seal.json --events edited-events.jsonl   # one byte edited (part 20)"
	"$WITNESS" verify --seal capture-seal.json --events edited-events.jsonl
	echo "exit code: $?"
	echo
	head -n -1 rec/events.jsonl >cut-events.jsonl
	echo "\$ witness verify --seal capture-seal.json --events cut-events.jsonl   # the signed end removed"
	"$WITNESS" verify --seal capture-seal.json --events cut-events.jsonl
	echo "exit code: $?"
	echo
	echo "\$ witness verify --seal capture-seal.json --events rec/events.jsonl --sarif --out verify.sarif"
	"$WITNESS" verify --seal capture-seal.json --events rec/events.jsonl --sarif --out verify.sarif
	echo "exit code: $?"
	echo
	"$WITNESS" graph --events rec/events.jsonl --out verify-graph.jsonld 2>/dev/null
	echo "\$ witness verify --seal capture-seal.json --graph verify-graph.jsonld   # the graph of the clean capture, alone"
	"$WITNESS" verify --seal capture-seal.json --graph verify-graph.jsonld
	echo "exit code: $?"
	echo
	echo "\$ witness verify --seal capture-seal.json --graph verify-graph.jsonld --events rec/events.jsonl   # checked against its log"
	"$WITNESS" verify --seal capture-seal.json --graph verify-graph.jsonld --events rec/events.jsonl
	echo "exit code: $?"
	echo
	cp "$REPO/testdata/compat/atw-0.1.0/hansard_scenario_1.jsonl" "$REPO/testdata/compat/atw-0.1.0/seal_without_damaging_tool.json" .
	"$WITNESS" import --from atw-0.1.0 hansard_scenario_1.jsonl --out hansard.jsonl >/dev/null 2>&1
	echo "\$ ATW_WITNESS_KEY=<32 zero bytes> witness verify --seal seal_without_damaging_tool.json --events hansard.jsonl   # 0.1.0's HANSARD"
	ATW_WITNESS_KEY=0000000000000000000000000000000000000000000000000000000000000000 \
		"$WITNESS" verify --seal seal_without_damaging_tool.json --events hansard.jsonl
	echo "exit code: $?"
	set -e
)
