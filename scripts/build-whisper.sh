#!/usr/bin/env bash
# Build whisper.cpp's `whisper-server` (the HTTP server example, so IRIS loads the model once
# per daemon) from the whisper.cpp source vendored in npm nodejs-whisper@0.3.1 (whisper.cpp
# 1.9.1), and install it as PREFIX/bin/whisper-server. Only that target is built.
#
#   scripts/build-whisper.sh PREFIX        e.g. .cache/whisper, or debian/iris/usr/lib/iris
#
# CPU flags: portable, never -march=native (GGML_NATIVE=OFF). Measured on the 2-core Debian 12
# dev machine (gcc 12.2, cmake 3.25, -j2):
#   (a) fixed x86-64-v3 baseline (SSE4.2 AVX AVX2 FMA F16C BMI2), static ggml/whisper libraries:
#       CHOSEN. 2 m 52 s – 3 m 01 s (3.3 min of CPU); one 3.3 MB executable that needs only
#       libc, libstdc++, libgcc and libgomp, nothing to load at run time. Runs on every x86-64 CPU since Haswell (2013) /
#       Excavator (2015); on an older CPU it dies with SIGILL, which `iris doctor` can check
#       (grep -w avx2 /proc/cpuinfo).
#   (b) GGML_BACKEND_DL=ON + GGML_CPU_ALL_VARIANTS=ON: 14 CPU backends (x64 … sapphirerapids)
#       as shared modules, the best one chosen at run time. 17 min of CPU against 3.3 for (a)
#       (measured 16 min wall with another build running; ≈9–10 min on 2 idle cores), and 23
#       shared objects (16 MB) to ship with an RPATH. Here it picked the cascadelake (AVX-512)
#       variant and encoded ~30 % faster than (a) (tiny, audio_ctx 512: ~570 vs ~810 ms).
#       Rejected for now: 5× the build for AVX-512 machines only; worth it on a bigger builder.
# OpenMP stays on (GGML_OPENMP=ON, ggml's default), so the binary needs libgomp1 (dh_shlibdeps
# finds it). Without OpenMP, ggml's own spinning thread pool collapsed whenever anything else
# wanted a core: a 2 s utterance on the micro model took 3–16 s instead of 0.6 s, while the
# OpenMP build stayed at 0.5–0.7 s under the same load (src/pipeline/whisper.ts also runs it
# with OMP_WAIT_POLICY=PASSIVE, which was faster still).
# arm64: no x86 flags; the armv8-a baseline (NEON; Raspberry Pi 4 and up). Set
# IRIS_WHISPER_ARM_ARCH (e.g. armv8.2-a+dotprod+fp16 for a Pi 5) for a newer baseline.
#
# Idempotent: does nothing when PREFIX/bin/whisper-server exists and PREFIX/bin/
# whisper-server.stamp names the same whisper.cpp version and flags. As root on a fresh Debian
# it apt-installs whatever of cmake, g++ and make is missing. Environment:
#   WHISPER_SRC             whisper.cpp source tree (default: node_modules/nodejs-whisper/cpp/whisper.cpp)
#   IRIS_WHISPER_BUILD_DIR  keep the cmake build tree there (default: a temporary directory)
set -euo pipefail

die() { echo "build-whisper: $*" >&2; exit 1; }

[ $# -eq 1 ] && [ -n "$1" ] || die "usage: $0 PREFIX"
mkdir -p "$1"
PREFIX=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=${WHISPER_SRC:-$ROOT/node_modules/nodejs-whisper/cpp/whisper.cpp}
[ -f "$SRC/CMakeLists.txt" ] || die "no whisper.cpp source at $SRC (run npm install: it comes with nodejs-whisper)"
VERSION=$(sed -n 's/^project("whisper.cpp" VERSION \([0-9.]*\)).*/\1/p' "$SRC/CMakeLists.txt")
[ -n "$VERSION" ] || die "cannot read the whisper.cpp version from $SRC/CMakeLists.txt"

ARCH=$(uname -m)
case "$ARCH" in
  x86_64)
    CPU_FLAGS=(-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
               -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF)
    grep -qw avx2 /proc/cpuinfo 2>/dev/null ||
      echo "build-whisper: warning: this CPU has no AVX2; the x86-64-v3 binary will not run here" >&2
    ;;
  aarch64 | arm64)
    CPU_FLAGS=()
    [ -z "${IRIS_WHISPER_ARM_ARCH:-}" ] || CPU_FLAGS=("-DGGML_CPU_ARM_ARCH=$IRIS_WHISPER_ARM_ARCH")
    ;;
  *)
    CPU_FLAGS=() # ggml's portable defaults for that architecture
    ;;
esac
FLAGS=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=ON
       -DGGML_CCACHE=OFF -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_EXAMPLES=ON -DWHISPER_BUILD_SERVER=ON
       -DWHISPER_SDL2=OFF -DWHISPER_CURL=OFF "${CPU_FLAGS[@]}")

BIN="$PREFIX/bin/whisper-server"
STAMP="$PREFIX/bin/whisper-server.stamp"
WANT="whisper.cpp $VERSION $ARCH ${FLAGS[*]}"
up_to_date() { [ -x "$BIN" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; }
if up_to_date; then
  echo "build-whisper: $BIN is up to date (whisper.cpp $VERSION)"
  exit 0
fi

# A build with the same version and flags elsewhere (IRIS_WHISPER_PREBUILT, e.g. the test
# suite's .cache/whisper, which scripts/build-deb.sh passes) is the same binary: copy it.
PREBUILT=${IRIS_WHISPER_PREBUILT:-}
if [ -n "$PREBUILT" ] && [ -x "$PREBUILT/bin/whisper-server" ] && [ "$(cat "$PREBUILT/bin/whisper-server.stamp" 2>/dev/null)" = "$WANT" ]; then
  mkdir -p "$PREFIX/bin"
  install -m 0755 "$PREBUILT/bin/whisper-server" "$BIN"
  printf '%s\n' "$WANT" >"$STAMP"
  echo "build-whisper: reused $PREBUILT/bin/whisper-server (same whisper.cpp $VERSION, same flags)"
  exit 0
fi

# One build per PREFIX at a time (two test runs may start together); the lock lives outside
# PREFIX so it never ends up in a package.
if command -v flock >/dev/null; then
  exec 9>"${TMPDIR:-/tmp}/iris-build-whisper-$(printf '%s' "$PREFIX" | cksum | cut -d' ' -f1).lock"
  flock 9
  if up_to_date; then
    echo "build-whisper: $BIN was just built by another run"
    exit 0
  fi
fi

# Tools: cmake, a C++17 compiler, make.
MISSING=()
command -v cmake >/dev/null || MISSING+=(cmake)
command -v g++ >/dev/null || command -v c++ >/dev/null || MISSING+=(g++)
command -v make >/dev/null || MISSING+=(make)
if [ ${#MISSING[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "build-whisper: installing ${MISSING[*]} (apt-get install --no-install-recommends)"
    export DEBIAN_FRONTEND=noninteractive
    apt_install() { apt-get install -y -qq --no-install-recommends "${MISSING[@]}" >/dev/null; }
    apt_install 2>/dev/null || { apt-get update -qq && apt_install; } # fresh systems have no package lists
    echo "build-whisper: installed $(dpkg-query -W -f='${Package} ${Version}, ' "${MISSING[@]}" | sed 's/, $//')"
  else
    die "missing ${MISSING[*]}: apt-get install ${MISSING[*]} (as root), then run this again"
  fi
fi

if [ -n "${IRIS_WHISPER_BUILD_DIR:-}" ]; then
  BUILD=$IRIS_WHISPER_BUILD_DIR
else
  BUILD=$(mktemp -d "${TMPDIR:-/tmp}/whisper-build.XXXXXX")
  trap 'rm -rf "$BUILD"' EXIT
fi

echo "build-whisper: building whisper-server $VERSION for $ARCH in $BUILD"
STARTED=$SECONDS
cmake -S "$SRC" -B "$BUILD" "${FLAGS[@]}" >"$BUILD/configure.log" 2>&1 ||
  { tail -n 30 "$BUILD/configure.log" >&2; die "cmake configure failed (last lines above)"; }
cmake --build "$BUILD" --target whisper-server -j2 >"$BUILD/build.log" 2>&1 ||
  { tail -n 30 "$BUILD/build.log" >&2; die "build failed (last lines above)"; }

mkdir -p "$PREFIX/bin"
install -m 0755 "$BUILD/bin/whisper-server" "$BIN.new"
mv -f "$BIN.new" "$BIN" # atomic: a running test never sees half a binary
printf '%s\n' "$WANT" >"$STAMP"
echo "build-whisper: installed $BIN in $((SECONDS - STARTED)) s"
