#!/bin/sh
# The client under test of the MCP conformance suite's client scenarios
# (docs/design/conformance.md): the suite starts a scenario server and runs
#   conformance-client.sh <server URL>
# with MCP_CONFORMANCE_SCENARIO naming the scenario. This runs
# `witness capture --url` against it, with the scripted session of
# testdata/conformance/client/<scenario>.json when there is one (a "/" in
# the name is a "_" in the file name), else the handshake and tool listing.
# $WITNESS is the witness binary (default: witness on PATH); the recording
# goes to $CONFORMANCE_OUT/<scenario>.
set -eu
url=$1
scen=$(printf '%s' "${MCP_CONFORMANCE_SCENARIO:?set by the conformance suite}" | tr / _)
dir=$(cd "$(dirname "$0")/../testdata/conformance/client" && pwd)
out=${CONFORMANCE_OUT:?folder for the recordings}/$scen
set -- capture --out "$out" --force --timeout 20s --url "$url"
if [ -f "$dir/$scen.json" ]; then
	set -- "$@" --scenario "$dir/$scen.json"
fi
exec "${WITNESS:-witness}" "$@"
