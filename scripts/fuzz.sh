#!/usr/bin/env bash
# Runs every `func FuzzXxx(f *testing.F)` in the module for a short time each.
# Usage: scripts/fuzz.sh [DURATION]   (default 3s)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-3s}"
count=0
while IFS= read -r line; do
	file="${line%%:*}"
	name=$(sed -E 's/.*func (Fuzz[A-Za-z0-9_]+)\(.*/\1/' <<<"$line")
	pkg="./$(dirname "$file")"
	echo "fuzz $pkg $name ($fuzztime)"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/witness-fuzz.$$.log 2>&1 || {
		cat /tmp/witness-fuzz.$$.log
		echo "fuzz target $name in $pkg failed"
		exit 1
	}
	count=$((count + 1))
done < <(grep -rEn --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . | grep -v node_modules | sort)
rm -f /tmp/witness-fuzz.$$.log
echo "fuzz: $count targets ran for $fuzztime each"
