#!/usr/bin/env bash
# Run every test on a fresh Debian 12 machine: installs what the suite needs, then type-checks,
# lints, runs the vitest suite on this Node and again on Node 18 (Debian 12's; the real-time room
# and speech-engine tests on Node 18 only), builds the .deb and tests it in a Debian 12 chroot
# between the two (scripts/test-deb.sh), and ends with one "N passed, N failed" line.
#
# Everything the tests need is installed once, up front, with its output shown: Debian packages
# (only missing ones; nothing installed is upgraded where the archive allows it, see
# scripts/lib/setup.sh), the npm packages (npm ci), whisper-server (built from source, about
# 3 minutes on 2 cores the first time) and Node 18. A kit that cannot be installed stops the
# run here, with its error, instead of failing tests later.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
echo "== setting up (each stage says when it began, in seconds since the start)"
# The tests run the voice path (espeak-ng, sox, ALSA, pocketsphinx), speak commands in flite's
# and festival's voices too (voices the code was not tuned on), check the unit, build
# whisper.cpp (cmake, g++), and make Piper-shaped voices (python3-onnx). As root, the .deb's
# build and test tools too (scripts/build-deb.sh, scripts/test-deb.sh), in the same apt run.
needs="$IRIS_VOICE_NEEDS
flite flite
text2wave festival
/usr/share/festival/voices/english/kal_diphone festvox-kallpc16k
/usr/share/festival/voices/us/cmu_us_slt_arctic_hts festvox-us-slt-hts
systemd-analyze systemd
cmake cmake
g++ g++
make make
pkg-config pkg-config
/usr/include/webrtc_audio_processing/webrtc/modules/audio_processing/include/audio_processing.h libwebrtc-audio-processing-dev
/usr/lib/python3/dist-packages/onnx python3-onnx"
if [ "$(id -u)" -eq 0 ]; then
  needs="$needs
dpkg-buildpackage dpkg-dev
dh debhelper
fakeroot fakeroot
debootstrap debootstrap
systemd-nspawn systemd-container
piuparts piuparts"
fi
ensure_node "$needs"
# The Debian 12 root the package is tested in (debootstrap: mostly download) is made in the
# background while the rest sets up and the unit tests run.
base_job=
if [ "$(id -u)" -eq 0 ]; then
  mkdir -p .cache
  bash scripts/test-deb.sh --base >.cache/base.log 2>&1 &
  base_job=$!
fi
ensure_modules
bash scripts/build-whisper.sh .cache/whisper
major=$(node -p 'process.versions.node.split(".")[0]')
node18=
if [ "$major" != 18 ]; then
  node18=$(scripts/node18.sh)
  echo "Node 18 for the second pass: $node18 ($("$node18" --version))"
fi

echo "== typecheck and lint (at ${SECONDS} s)"
npm run --silent typecheck
npm run --silent lint

results=$(mktemp -d)
trap 'rm -rf "$results"; [ -z "$base_job" ] || kill "$base_job" 2>/dev/null || true' EXIT
run_suite() { # $1: node binary, $2: label, then vitest's own options
  echo "== vitest on $2 ($("$1" --version), at ${SECONDS} s)"
  "$1" node_modules/vitest/vitest.mjs run --reporter=default --reporter=json --outputFile="$results/$2.json" "${@:3}" || true
}
# Some files run once, on Node 18 (the Node the package runs on): the real-time room tests
# (room, rooms, alsa: they wait on audio played at its own pace) and the speech engines on real
# recordings (speech, local-spoken, babble, webrtc-aec: pocketsphinx, openWakeWord, speexdsp and
# webrtc are native libraries, whose answers do not depend on Node). Together about 45 % of a
# pass's time.
node18_only=()
if [ -n "$node18" ]; then
  for name in room rooms alsa speech local-spoken babble webrtc-aec; do node18_only+=("--exclude=test/$name.test.ts"); done
fi
run_suite "$(command -v node)" node "${node18_only[@]}"

# The Debian package: built, lintian-checked, installed into a Debian 12 chroot, removed, purged.
# Alone between the passes: beside a vitest pass both took as long as one after the other.
if [ "$(id -u)" -eq 0 ]; then
  echo "== the Debian package (at ${SECONDS} s)"
  wait "$base_job" || echo "making the Debian 12 root in the background failed (.cache/base.log): trying again"
  base_job=
  bash scripts/test-deb.sh 2>&1 | tee "$results/deb.log" || true
  deb_summary=$(tail -n 1 "$results/deb.log")
else
  echo "== the Debian package: skipped (needs root for the chroot)"
  deb_summary="deb: 0 passed, 0 failed"
fi

[ -z "$node18" ] || run_suite "$node18" node18

echo "== all stages done in ${SECONDS} s"
node --import tsx scripts/lib/test-summary.ts "$results" "$deb_summary"
