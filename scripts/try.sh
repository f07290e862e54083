#!/usr/bin/env bash
# Run IRIS on its built-in defaults on a fresh Debian 12 machine: installs what it needs,
# then asks it the time in Tokyo and a percentage through the deterministic local path.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
ensure_node
ensure_modules
for question in "what time is it in Tokyo" "what is 17% of 2,340"; do
  printf '> %s\n' "$question"
  npm run --silent iris -- ask "$question"
done
