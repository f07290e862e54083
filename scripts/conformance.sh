#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance) in client mode against
# IRIS's own MCP client, driven through its CLI (scripts/conformance-client.sh); prints a
# pass/fail table. The suite needs Node 22, so it and the npm package node@22 are installed
# under scratch/conformance/ (not dependencies of IRIS). Scenarios: every one tied to a dated
# spec version (draft and extension scenarios are left out). CONFORMANCE_VERSION picks the
# suite's version; arguments name scenarios to run instead of all.
# Usage: scripts/conformance.sh [SCENARIO…]
set -euo pipefail
cd "$(dirname "$0")/.."
version=${CONFORMANCE_VERSION:-0.1.16}
dir=$PWD/scratch/conformance
suite=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
node22=$dir/node_modules/.bin/node
if ! grep -qs "\"version\": \"$version\"" "$dir/node_modules/@modelcontextprotocol/conformance/package.json" || [ ! -x "$node22" ]; then
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@$version" node@22 >&2
fi
if [ $# -gt 0 ]; then
  scenarios=("$@")
else
  mapfile -t scenarios < <("$node22" "$suite" list --client | sed -n 's/^  - \([^ ]*\) \[.*[0-9]\{4\}-[0-9][0-9]-[0-9][0-9].*\]$/\1/p')
fi
out=$dir/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
printf '%-45s %-6s %s\n' scenario result 'checks passed'
passed=0
for scenario in "${scenarios[@]}"; do
  log=$out/${scenario//\//_}.log
  if "$node22" "$suite" client --command "$PWD/scripts/conformance-client.sh" --scenario "$scenario" --timeout 30000 -o "$out" >"$log" 2>&1; then
    result=pass
    passed=$((passed + 1))
  else
    result=FAIL
  fi
  # The suite's own tally: "Passed: 3/3, 0 failed, 0 warnings".
  summary=$(sed -n 's/^Passed: \(.*\)$/\1/p' "$log" | tail -1)
  printf '%-45s %-6s %s\n' "$scenario" "$result" "${summary:-?}"
done
printf '%d of %d scenarios passed (suite %s; logs and checks in %s)\n' "$passed" "${#scenarios[@]}" "$version" "$out"
[ "$passed" -eq "${#scenarios[@]}" ]
