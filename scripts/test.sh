#!/usr/bin/env bash
# Run every test on a fresh Debian 12 machine: installs what the suite needs, then type-checks,
# lints, runs the vitest suite on this Node and again on Node 18 (Debian 12's), builds the .deb
# and tests it in a Debian 12 chroot (scripts/test-deb.sh), and ends with one
# "N passed, N failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
# The tests run the voice path (espeak-ng, sox, ALSA, pocketsphinx), speak commands in flite's
# and festival's voices too (voices the code was not tuned on), check the unit, build
# whisper.cpp (cmake, g++), and make Piper-shaped voices (python3-onnx).
ensure_node "$IRIS_VOICE_NEEDS
flite flite
text2wave festival
/usr/share/festival/voices/english/kal_diphone festvox-kallpc16k
/usr/share/festival/voices/us/cmu_us_slt_arctic_hts festvox-us-slt-hts
systemd-analyze systemd
cmake cmake
g++ g++
make make
/usr/lib/python3/dist-packages/onnx python3-onnx"
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

# The Debian package: built, lintian-checked, installed into a Debian 12 chroot, removed, purged.
deb_summary="deb: 0 passed, 1 failed"
if [ "$(id -u)" -eq 0 ]; then
  echo "== the Debian package"
  bash scripts/test-deb.sh > "$results/deb.log" 2>&1 || true
  cat "$results/deb.log"
  deb_summary=$(tail -n 1 "$results/deb.log")
  rm "$results/deb.log" # the summary below reads only the vitest reports from this dir
else
  echo "== the Debian package: skipped (needs root for the chroot)"
  deb_summary="deb: 0 passed, 0 failed"
fi

node -e '
  const fs = require("fs"); let passed = 0, failed = 0, files = 0;
  for (const f of fs.readdirSync(process.argv[1])) {
    const r = JSON.parse(fs.readFileSync(`${process.argv[1]}/${f}`, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests + (r.numFailedTestSuites ?? 0); files++;
    if (!r.success && r.numFailedTests === 0) failed++;
  }
  if (files === 0) failed++;
  const deb = /(\d+) passed, (\d+) failed/.exec(process.argv[2]) ?? [0, 0, 1];
  passed += Number(deb[1]); failed += Number(deb[2]);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
' "$results" "$deb_summary"
