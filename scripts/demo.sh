#!/usr/bin/env bash
# `make demo`: the whole witness pipeline on bundled data. Each part in
# scripts/demo.d/ (in name order) runs in the same work directory, $DEMO,
# with the freshly built binary as $WITNESS, and prints what a user needs.
set -euo pipefail
cd "$(dirname "$0")/.."
export WITNESS="$PWD/bin/witness"
export REPO="$PWD"
DEMO="$(mktemp -d "${TMPDIR:-/tmp}/witness-demo.XXXXXX")"
export DEMO
trap 'rm -rf "$DEMO"' EXIT
export ATW_WITNESS_TS="2026-08-30T14:33:00+00:00"
export WITNESS_KEYRING="$DEMO/keys.json"
for part in scripts/demo.d/*.sh; do
	[ -e "$part" ] || continue
	# shellcheck source=/dev/null
	source "$part"
done
echo
echo "demo finished; its files were in $DEMO (removed on exit)"
