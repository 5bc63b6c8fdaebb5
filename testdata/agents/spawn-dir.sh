#!/bin/sh
# spawn-dir.sh BASE CMD [ARGS...] runs CMD with every argument that is
# exactly @DIR@ replaced by BASE/N, N the first of 1, 2, ... that it can
# create (mkdir, so two spawns never share one). It exists because an MCP
# client may start a stdio server command more than once per session: the
# MCP client of @openai/agents 0.20 (versionNegotiation "auto") first starts
# a disposable sibling to probe server/discover, ends it, then starts the
# command again for the session. `witness proxy --out DIR` refuses a DIR
# that holds a recording, so each start needs its own: BASE/1 is the probe,
# BASE/2 the session (docs/design/agent-e2e.md).
set -eu
base=$1
shift
mkdir -p "$base"
n=1
while ! mkdir "$base/$n" 2>/dev/null; do
	n=$((n + 1))
	if [ "$n" -gt 64 ]; then
		echo "spawn-dir.sh: no free directory under $base" >&2
		exit 5
	fi
done
for a; do
	shift
	if [ "$a" = "@DIR@" ]; then set -- "$@" "$base/$n"; else set -- "$@" "$a"; fi
done
exec "$@"
