#!/usr/bin/env bash
# Build IRIS's C shim over webrtc-audio-processing (native/webrtc-aec.cc: Debian 12's
# libwebrtc-audio-processing1 0.3 has a C++ API only; src/pipeline/webrtc-aec.ts binds the shim
# with koffi) and install it as PREFIX/lib/libiris-webrtc-aec.so.
#
#   scripts/build-webrtc-aec.sh PREFIX        e.g. .cache/webrtc-aec, or debian/generated
#
# Needs g++ and libwebrtc-audio-processing-dev (pkg-config name webrtc-audio-processing);
# without the -dev package it says so and exits 1 (the voice then falls back to speexdsp).
# Idempotent: does nothing when PREFIX/lib/libiris-webrtc-aec.stamp names the same source
# (its sha256), library version and flags. Takes about 5 s.
set -euo pipefail

die() { echo "build-webrtc-aec: $*" >&2; exit 1; }

[ $# -eq 1 ] && [ -n "$1" ] || die "usage: $0 PREFIX"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=$ROOT/native/webrtc-aec.cc
command -v g++ >/dev/null || die "g++ is missing (apt-get install g++)"
PKG=webrtc-audio-processing
VERSION=$(pkg-config --modversion "$PKG" 2>/dev/null) ||
  die "libwebrtc-audio-processing-dev is not installed (apt-get install --no-install-recommends libwebrtc-audio-processing-dev)"
# Debian's hardening flags when dpkg-buildflags is there (the package build), else plain -O2.
if command -v dpkg-buildflags >/dev/null; then
  read -ra CXXFLAGS <<<"$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CXXFLAGS) $(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CPPFLAGS)"
  read -ra LDFLAGS <<<"$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get LDFLAGS)"
else
  CXXFLAGS=(-O2 -g)
  LDFLAGS=()
fi
read -ra PKG_CFLAGS <<<"$(pkg-config --cflags "$PKG" | sed 's/-I/-isystem /g')" # its headers' warnings are not ours
read -ra PKG_LIBS <<<"$(pkg-config --libs "$PKG")"
# Default visibility, not -fvisibility=hidden: webrtc::Config finds an option by the address of
# a static in a template (Config::identifier<T>), which only matches the library's own when the
# dynamic linker can unify the two (hidden, the extended filter and delay-agnostic flags were
# silently ignored).
FLAGS=(-std=c++11 -fPIC -shared -Wall -Wextra "${CXXFLAGS[@]}" "${PKG_CFLAGS[@]}")
LINK=(-Wl,-soname,libiris-webrtc-aec.so -Wl,--as-needed "${LDFLAGS[@]}" "${PKG_LIBS[@]}")

mkdir -p "$1/lib"
LIB=$(cd "$1/lib" && pwd)/libiris-webrtc-aec.so
STAMP=${LIB%.so}.stamp
WANT="$(sha256sum "$SRC" | cut -d' ' -f1) $PKG $VERSION $(uname -m) ${FLAGS[*]} ${LINK[*]}"
if [ -f "$LIB" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  echo "build-webrtc-aec: $LIB is up to date"
  exit 0
fi
g++ "${FLAGS[@]}" "$SRC" -o "$LIB.new" "${LINK[@]}"
mv -f "$LIB.new" "$LIB" # atomic: a running test never loads half a library
printf '%s\n' "$WANT" >"$STAMP"
echo "build-webrtc-aec: built $LIB ($PKG $VERSION)"
