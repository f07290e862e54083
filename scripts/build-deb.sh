#!/usr/bin/env bash
# Build the .deb from a clean copy of this checkout (what git tracks, plus new files it does
# not ignore) with dpkg-buildpackage, check it with lintian, and leave it in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
needs="dpkg-buildpackage dpkg-dev
dh debhelper
fakeroot fakeroot
pkg-config pkg-config
/usr/include/webrtc_audio_processing/webrtc/modules/audio_processing/include/audio_processing.h libwebrtc-audio-processing-dev"
# lintian runs on this machine, or in the Debian root $IRIS_LINT_ROOT when given (test-deb.sh).
[ -n "${IRIS_LINT_ROOT:-}" ] || needs="$needs
lintian lintian"
ensure_node "$needs"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/iris" build
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | xargs -0 cp --parents -t "$work/iris"
# Reuse this checkout's node_modules when it has one: the build needs the dev tools only.
[ -d node_modules ] && cp -a node_modules "$work/iris/"
# whisper-server: the test suite's build (same script, same flags) saves three minutes; the word
# vectors and WordNet compacted by an earlier build (scripts/build.ts) save 10 s and 500 MB of reading.
mkdir -p "$work/iris/.cache"
cp .cache/iris-word-vectors-*.bin .cache/iris-thesaurus-*.bin "$work/iris/.cache/" 2>/dev/null || true
[ -x .cache/whisper/bin/whisper-server ] && export IRIS_WHISPER_PREBUILT=$PWD/.cache/whisper
(cd "$work/iris" && dpkg-buildpackage -us -uc -b >&2)
deb=$(ls "$work"/iris_*_"$(dpkg --print-architecture)".deb)
lint=(lintian --fail-on warning --suppress-tags initial-upload-closes-no-bugs)
if [ -n "${IRIS_LINT_ROOT:-}" ]; then
  systemd-nspawn -q -D "$IRIS_LINT_ROOT" --register=no --keep-unit --bind-ro="$deb:/root/$(basename "$deb")" \
    "${lint[@]}" "/root/$(basename "$deb")" >&2
else
  "${lint[@]}" "$deb" >&2
fi
cp "$deb" build/
echo "build/$(basename "$deb")"
