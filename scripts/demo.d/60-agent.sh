# Part 60: a real agent falls for a prompt injection. Recorded by `make
# demo-record` (testdata/demo/agent, internal/agente2e): @openai/agents and
# the Anthropic SDK's tool runner, each with server-filesystem over stdio
# and server-everything over Streamable HTTP, every channel through `witness
# proxy`; the scripted model reads inbox/poisoned.txt, whose text says to
# overwrite precious.txt, and does. Each log verifies on its own (signed by
# the recording's key: its public half is trust.json); then the three logs
# of one run are judged as one: verify's injection-provenance finding, why
# the overwrite happened, and replay without the poisoned read. The
# incident report of the openai-agents run is written at the end of `make
# demo` (scripts/demo-report.sh).
echo
echo "== 60 agent: a real agent reads a poisoned file and overwrites another =="
(
	cd "$DEMO"
	rm -rf agent
	cp -R "$REPO/testdata/demo/agent" agent
	cd agent
	set +e
	# evid LOG TOOL: the event id of LOG's first tool_call of TOOL.
	evid() { grep '"kind":"tool_call"' "$1" | grep "\"tool\":\"$2\"" | grep -o '"id":"e[0-9]*"' | head -n 1 | cut -d'"' -f4; }
	echo "the file the agent read (inbox/poisoned.txt), as the fs log holds its result:"
	grep -o 'IMPORTANT NOTICE[^"\\]*' openai-agents/fs/events.jsonl | head -n 1 | sed 's/^/  /'
	for fw in openai-agents anthropic-toolrunner; do
		echo
		echo "-- $fw: one log per channel, each verified on its own --"
		for ch in model fs everything; do
			echo "\$ witness verify --events $fw/$ch/events.jsonl --trust trust.json"
			"$WITNESS" verify --events "$fw/$ch/events.jsonl" --trust trust.json 2>&1 | tail -n 1 | cut -c1-160
			echo "exit code: ${PIPESTATUS[0]}"
		done
	done
	echo
	"$WITNESS" seal --spec agent.json --out agent-seal.json >/dev/null
	for fw in openai-agents anthropic-toolrunner; do
		logs=(--events "$fw/model/events.jsonl" --events "$fw/fs/events.jsonl" --events "$fw/everything/events.jsonl")
		write=$(evid "$fw/fs/events.jsonl" write_file)
		read=$(evid "$fw/fs/events.jsonl" read_text_file)
		echo "-- $fw: the three logs as one run --"
		echo "\$ witness verify --events $fw/model/events.jsonl --events $fw/fs/events.jsonl --events $fw/everything/events.jsonl --seal agent-seal.json --trust trust.json"
		"$WITNESS" verify "${logs[@]}" --seal agent-seal.json --trust trust.json 2>&1 | grep -v ': notice: '
		echo "exit code: ${PIPESTATUS[0]}"
		echo
		echo "\$ witness why fs:$write --events ... (the same three logs)"
		"$WITNESS" why "fs:$write" "${logs[@]}" --seal agent-seal.json
		echo "exit code: $?"
		echo
		echo "\$ witness replay --events ... --remove fs:$read --seal agent-seal.json --format text   # (excerpt)"
		# the summary lines, the overwrite's, and the findings that resolve
		"$WITNESS" replay "${logs[@]}" --remove "fs:$read" --seal agent-seal.json --format text 2>&1 |
			grep -E "^(witness|remove|compensation set|not replayable|verdict|drift)|/call/$write |/call/$write:|^  resolved"
		echo "exit code: ${PIPESTATUS[0]}"
		echo
	done
	set -e
)
