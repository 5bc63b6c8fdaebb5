#!/usr/bin/env bash
# Seal and keyring CLI latency: wall time per process, HMAC vs Ed25519,
# verification alone vs with a 3-of-3 quorum, key rotation under the lock.
set -euo pipefail
W="$PWD/bin/witness"
[ -x "$W" ] || go build -o "$W" ./cmd/witness
tmp="$(mktemp -d "${TMPDIR:-/tmp}/witness-bench-seal.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export ATW_WITNESS_TS=2026-08-30T14:33:00+00:00 WITNESS_KEYRING="$tmp/keys.json"
cp "$OLDPWD/testdata/demo/agent.json" "$OLDPWD/testdata/demo/prompt.md" .
"$W" key generate --alg hmac-sha256 >/dev/null
for w in a b c; do
	"$W" key generate --keyring "$w.json" >/dev/null
	"$W" key export-public --keyring "$w.json" --out trust.json --merge >/dev/null
done
"$W" seal --spec agent.json --out hmac.json >/dev/null
"$W" seal --spec agent.json --out ed.json --keyring a.json >/dev/null
"$W" cosign ed.json --keyring b.json --out ed.b.json >/dev/null
"$W" cosign ed.b.json --keyring c.json --out ed.bc.json >/dev/null
mv ed.bc.json ed.json
n=30
measure() { # name, command...
	local name="$1"
	shift
	local start end
	start=$(date +%s%N)
	for _ in $(seq "$n"); do "$@" >/dev/null; done
	end=$(date +%s%N)
	printf '%-34s %6d %10.2f\n' "$name" "$n" "$(awk -v s="$start" -v e="$end" -v n="$n" 'BEGIN { print (e - s) / n / 1000000 }')"
}
printf '%-34s %6s %10s\n' "operation (one process each)" "runs" "ms/op"
measure "seal (hmac-sha256)" "$W" seal --spec agent.json --out s1.json
measure "seal (ed25519)" "$W" seal --spec agent.json --out s2.json --keyring a.json
measure "verify hmac seal (keyring)" "$W" verify --seal hmac.json
measure "verify ed25519, quorum 3 (trust)" "$W" verify --seal ed.json --trust trust.json --quorum 3
measure "rotate-key (flock + atomic write)" "$W" rotate-key
measure "list-keys (after $n rotations)" "$W" list-keys
