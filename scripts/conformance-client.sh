#!/usr/bin/env bash
# The client that the MCP conformance suite drives (scripts/conformance.sh): IRIS's own MCP
# client, through its CLI, pointed at the scenario's server (the URL is the last argument; the
# scenario's name is in MCP_CONFORMANCE_SCENARIO). Each run has its own config and state dir
# and no daemon, so the CLI connects in-process.
set -euo pipefail
url="${!#}"
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[assistant]\ntimezone = "UTC"\n\n[mcp.servers.conformance]\nurl = "%s"\nconfirm = "never"\n' "$url" > "$work/config"
export IRIS_CONFIG="$work/config" IRIS_STATE_DIR="$work/state" IRIS_SOCKET="$work/no-daemon.sock"
iris() { node --import tsx "$root/src/cli/iris.ts" --log-level info "$@"; }
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  tools_call) iris tools call conformance.add_numbers '{"a": 5, "b": 3}' ;;
  # The server asks with defaults for every field: "yes" sends them, as a person would.
  elicitation-*) echo yes | iris tools call conformance.test_client_elicitation_defaults ;;
  sse-retry) iris tools call conformance.test_reconnection ;;
  # initialize, and the auth scenarios: connect, initialize, list the tools.
  *) iris mcp list ;;
esac
