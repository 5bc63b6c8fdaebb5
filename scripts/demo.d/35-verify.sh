# Part 35: verify. The session captured in part 20 judged against its seal:
# the clean capture verifies (exit 0); the copy with one byte edited is
# tampered (exit 3); the same capture cut before its signed end is
# incomplete (exit 4).
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
	set -e
)
