# Part 10: seal and keyring. A temporary keyring, a seal of the bundled agent
# spec, its verification, a one-byte change being caught, and a 2-of-3
# Ed25519 quorum checked with public keys only.
echo
echo "== 10 seal: sign what the agent may do, before it runs =="
cp "$REPO/testdata/demo/agent.json" "$REPO/testdata/demo/prompt.md" "$DEMO/"
(
	cd "$DEMO"
	echo "\$ witness key generate      # WITNESS_KEYRING=\$DEMO/keys.json"
	"$WITNESS" key generate | sed "s#$DEMO/##"
	echo "\$ witness seal --spec agent.json --out seal.json"
	"$WITNESS" seal --spec agent.json --out seal.json
	echo "\$ witness verify --seal seal.json"
	"$WITNESS" verify --seal seal.json
	echo
	sed 's/"witness-demo-1"/"witness-demo-2"/' seal.json > seal-edited.json
	echo "\$ witness verify --seal seal-edited.json    # witness_id changed by one byte"
	rc=0
	"$WITNESS" verify --seal seal-edited.json 2>/dev/null || rc=$?
	echo "exit code $rc (3 = tampered)"
	echo
	echo "2-of-3 Ed25519 quorum: three witnesses, public keys in one trust file"
	for w in alice bob carol; do
		"$WITNESS" key generate --keyring "q/$w.json" >/dev/null
		"$WITNESS" key export-public --keyring "q/$w.json" --out trust.json --merge >/dev/null
	done
	echo "\$ witness seal --spec agent.json --out quorum-seal.json --keyring q/alice.json"
	"$WITNESS" seal --spec agent.json --out quorum-seal.json --keyring q/alice.json
	echo "\$ witness cosign quorum-seal.json --keyring q/bob.json --out quorum-seal.2.json"
	"$WITNESS" cosign quorum-seal.json --keyring q/bob.json --out quorum-seal.2.json
	echo "\$ witness verify --seal quorum-seal.2.json --trust trust.json --quorum 2"
	"$WITNESS" verify --seal quorum-seal.2.json --trust trust.json --quorum 2
	echo "\$ witness verify --seal quorum-seal.2.json --trust trust.json --quorum 3"
	rc=0
	"$WITNESS" verify --seal quorum-seal.2.json --trust trust.json --quorum 3 2>/dev/null || rc=$?
	echo "exit code $rc (1 = violation: the seal is genuine, the quorum is not met)"
)
