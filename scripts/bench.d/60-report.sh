#!/usr/bin/env bash
# witness report over a 100k-event synthetic log (witness-bench gen): the
# time and memory to write the page, its size (raw and gzipped: what a mail
# carries), and the time headless Chromium takes from navigation to the
# load event and to the end of the first render (report/browser_test.go
# TestBrowserLoadTime; skipped without /usr/bin/chromium). Timing is
# printed, never judged.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${REPORT_EVENTS:-100000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/witness-report-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/witness" ./cmd/witness
go build -o "$tmp/witness-bench" ./cmd/witness-bench
"$tmp/witness-bench" gen "$n" "$tmp/events.jsonl" >/dev/null
start=$(date +%s.%N)
"$tmp/witness" report --events "$tmp/events.jsonl" --allow-unsigned --out "$tmp/report.html" >/dev/null
end=$(date +%s.%N)
bytes=$(wc -c <"$tmp/report.html")
gz=$(gzip -9 -c "$tmp/report.html" | wc -c)
printf '%-24s %8s %10s %12s %12s\n' "benchmark" "events" "write_s" "bytes" "gzip_bytes"
printf '%-24s %8s %10.1f %12s %12s\n' "report-write" "$n" "$(echo "$end - $start" | bc)" "$bytes" "$gz"
if [ -x /usr/bin/chromium ]; then
	WITNESS_REPORT_BENCH="$tmp/report.html" go test ./report -run '^TestBrowserLoadTime$' -count=1 -v | grep '^report-load' || true
else
	echo "report-load: /usr/bin/chromium missing (.ci/install-services installs it)"
fi
