#!/usr/bin/env bash
# Run every test on a fresh Debian 12 machine: installs what the suite needs, then type-checks,
# lints and runs the vitest suite on this Node and again on Node 18 (Debian 12's), and ends
# with one "N passed, N failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
# The tests speak with espeak-ng and measure the audio with sox.
IRIS_APT_NEEDS="$IRIS_APT_NEEDS
espeak-ng espeak-ng
sox sox
systemd-analyze systemd"
ensure_node
ensure_modules
npm run --silent typecheck
npm run --silent lint

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
run_suite() { # $1: node binary, $2: label
  echo "== vitest on $2 ($("$1" --version))"
  "$1" node_modules/vitest/vitest.mjs run --reporter=default --reporter=json --outputFile="$results/$2.json" || true
}
run_suite "$(command -v node)" node
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" != 18 ]; then
  node18=$(scripts/node18.sh) && run_suite "$node18" node18
fi

node -e '
  const fs = require("fs"); let passed = 0, failed = 0, files = 0;
  for (const f of fs.readdirSync(process.argv[1])) {
    const r = JSON.parse(fs.readFileSync(`${process.argv[1]}/${f}`, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests + (r.numFailedTestSuites ?? 0); files++;
    if (!r.success && r.numFailedTests === 0) failed++;
  }
  if (files === 0) failed++;
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
' "$results"
