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
# Credentials the scenario pre-registered for the client (auth/pre-registration and the like).
if [ -n "${MCP_CONFORMANCE_CONTEXT:-}" ]; then
  node -e '
    const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT);
    const keys = ["client_id", "client_secret"].filter((k) => typeof c[k] === "string");
    if (keys.length) console.log(["", "[mcp.servers.conformance.oauth]", ...keys.map((k) => `${k} = ${JSON.stringify(c[k])}`)].join("\n"));
  ' >> "$work/config"
fi
export IRIS_CONFIG="$work/config" IRIS_STATE_DIR="$work/state" IRIS_SOCKET="$work/no-daemon.sock"
iris() { node --import tsx "$root/src/cli/iris.ts" --log-level info "$@"; }
case "${MCP_CONFORMANCE_SCENARIO:-}" in
  tools_call) iris tools call conformance.add_numbers '{"a": 5, "b": 3}' ;;
  # The server asks with defaults for every field: "yes" sends them, as a person would.
  elicitation-*) echo yes | iris tools call conformance.test_client_elicitation_defaults ;;
  sse-retry) iris tools call conformance.test_reconnection ;;
  # Sign in as a person does, then use the tools. iris mcp login prints the authorization
  # address on a line of its own; the suite's authorization server approves at once, so opening
  # the address (curl, following the redirect to IRIS's loopback listener) completes it.
  # A tool that answers "sign in again" (step-up: it needs a larger scope) gets a second sign-in.
  auth/*)
    login() {
      rm -f "$work/login" && mkfifo "$work/login"
      iris mcp login conformance > "$work/login" &
      local pid=$!
      while IFS= read -r line; do
        echo "$line" >&2
        case "$line" in http://* | https://*) curl -sS -o /dev/null -L --max-time 20 "$line" >&2 || true ;; esac
      done < "$work/login"
      wait "$pid" || echo "iris mcp login exited $?" >&2
    }
    login
    tool=$(iris tools list --json | node -e '
      let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).find((t) => t.name.startsWith("conformance."))?.name ?? ""))')
    if [ -n "$tool" ] && ! iris tools call "$tool" '{}' >&2; then
      login
      iris tools call "$tool" '{}' >&2 || true
    fi
    iris mcp list ;;
  # initialize: connect, initialize, list the tools.
  *) iris mcp list ;;
esac
