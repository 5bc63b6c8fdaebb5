#!/usr/bin/env bash
# The transparency log (witness log, --log): anchors per second with
# Tessera's POSIX driver and its MySQL driver (MariaDB, started on a private
# socket by .ci/with-services when installed), 500 sessions anchoring at
# once; the inclusion proof and bundle sizes; and the time of the
# anchoring part of 'verify --log DIR' with the log local (bundle offline,
# then consistency and every later entry hashed into the signed root).
set -euo pipefail
cd "$(dirname "$0")/../.."
run() { go test -run '^$' -bench 'BenchmarkTlog' -benchtime 1x ./tlog 2>&1 || true; }
if [ -z "${WITNESS_TEST_MYSQL_DSN:-}" ] && command -v mariadbd >/dev/null 2>&1; then
	out=$(bash .ci/with-services bash -c "$(declare -f run); run" 2>/dev/null)
else
	out=$(run)
fi
printf '%-24s %14s %12s %10s %10s\n' "benchmark" "anchors/s" "verify ms" "proof B" "bundle B"
awk '/^BenchmarkTlog/ {
	name = $1; sub(/^BenchmarkTlog/, "", name); sub(/-[0-9]+$/, "", name)
	an = "-"; ms = "-"; pr = "-"; bu = "-"
	for (i = 2; i <= NF; i++) {
		if ($(i+1) == "anchors/s") an = sprintf("%.0f", $i)
		if ($(i+1) == "ns/op" && name ~ /^VerifyLocal/) ms = sprintf("%.1f", $i / 1e6)
		if ($(i+1) == "proof-B") pr = $i
		if ($(i+1) == "bundle-B") bu = $i
	}
	printf "%-24s %14s %12s %10s %10s\n", name, an, ms, pr, bu
}' <<<"$out"
grep -q 'BenchmarkTlogAnchor/mysql' <<<"$out" || echo "(mysql: skipped: MariaDB not installed; run .ci/install-services)"
