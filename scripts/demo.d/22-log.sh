# Part 22: the event log itself. agent-trace-witness 0.1.0 evidence imported
# (pairing each response with the earliest open call of the same tool, where
# 0.1.0 took the newest open call of any tool), model input and output
# reported by a framework and appended, and a one-byte edit detected.
echo
echo "== 22 event log: import 0.1.0 evidence, append reported events, catch an edit =="
(
	cd "$DEMO"
	[ -f "$WITNESS_KEYRING" ] || "$WITNESS" key generate >/dev/null
	cp "$REPO/testdata/compat/atw-0.1.0/hansard_scenario_1.jsonl" "$REPO/testdata/compat/atw-0.1.0/seal_without_damaging_tool.json" .
	echo "\$ witness import --from atw-0.1.0 hansard_scenario_1.jsonl --out hansard-events.jsonl"
	"$WITNESS" import --from atw-0.1.0 hansard_scenario_1.jsonl --out hansard-events.jsonl 2>&1 | fold -w 130 -s
	echo "(0.1.0 paired the delete_file response with the read_file call; here it names e4, the delete_file call)"
	echo
	echo "\$ printf '%s\\n' '{\"kind\":\"model_input\",...,\"ref\":\"u1\"}' '{\"kind\":\"model_output\",...,\"input\":\"u1\"}' | witness capture append --events hansard-events.jsonl"
	printf '%s\n' \
		'{"kind":"model_input","role":"user","content":"tidy up /data","ref":"u1"}' \
		'{"kind":"model_output","content":"I will delete /data/secret.txt","input":"u1"}' |
		"$WITNESS" capture append --events hansard-events.jsonl 2>&1 | fold -w 130 -s
	grep -o '"id":"e9","input":"e8","kind":"model_output"' hansard-events.jsonl | sed 's/^/  /'
	echo
	echo "\$ ATW_WITNESS_KEY=00…00 witness verify --seal seal_without_damaging_tool.json --events hansard-events.jsonl"
	set +e
	ATW_WITNESS_KEY=$(printf '0%.0s' {1..64}) "$WITNESS" verify --seal seal_without_damaging_tool.json --events hansard-events.jsonl 2>&1 |
		grep -E ' error: |^verdict' | cut -c1-170
	echo
	echo "one byte edited in the appended model output (\"secret.txt\" -> \"secret.tx7\"):"
	cp hansard-events.jsonl hansard-edited.jsonl
	sed -i 's#I will delete /data/secret.txt#I will delete /data/secret.tx7#' hansard-edited.jsonl
	cmp hansard-events.jsonl hansard-edited.jsonl | sed 's/^/  /'
	echo "\$ ATW_WITNESS_KEY=00…00 witness verify --seal seal_without_damaging_tool.json --events hansard-edited.jsonl"
	ATW_WITNESS_KEY=$(printf '0%.0s' {1..64}) "$WITNESS" verify --seal seal_without_damaging_tool.json --events hansard-edited.jsonl 2>&1 |
		grep -E 'error: log-|^verdict' | cut -c1-170
	echo "exit code ${PIPESTATUS[0]} (3 = tampered)"
	set -e
)
