# Shared set-up for scripts/try.sh and scripts/test.sh: make sure Node.js (18.19 or newer,
# Debian 12's own is fine) and the npm dependencies are installed. Meant to be sourced.

# Debian packages to install when missing: one line "command package" (or "/path package").
IRIS_APT_NEEDS=${IRIS_APT_NEEDS:-"node nodejs
npm npm"}

apt_install_missing() {
  local missing=() cmd pkg
  while read -r cmd pkg; do
    [ -n "$cmd" ] || continue
    if [[ $cmd == /* ]]; then [ -e "$cmd" ] || missing+=("$pkg")
    else command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg"); fi
  done <<<"$1"
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
    return 1
  fi
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# What the voice path runs: espeak-ng speaks, sox makes fixtures, arecord/aplay are the
# microphone and speaker, pocketsphinx (with its English model) is the speech to text that
# needs no download, speexdsp cancels IRIS's echo on the microphone.
IRIS_VOICE_NEEDS="espeak-ng espeak-ng
sox sox
arecord alsa-utils
pocketsphinx_continuous pocketsphinx
/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict pocketsphinx-en-us
/usr/share/pocketsphinx/test/data/goforward.raw pocketsphinx-testdata
/usr/lib/x86_64-linux-gnu/libspeexdsp.so.1 libspeexdsp1"

# onnxruntime-node's install script would fetch CUDA binaries from the web and fail offline;
# the CPU binaries ship in the package.
export ONNXRUNTIME_NODE_INSTALL=skip

# ensure_node ["command package" lines for what else the caller needs]
ensure_node() {
  apt_install_missing "$IRIS_APT_NEEDS${1:+
$1}"
  node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 18 || (a === 18 && b >= 19) ? 0 : 1)' || {
    echo "IRIS needs Node.js 18.19 or newer; this is $(node --version)" >&2
    return 1
  }
}

# Install the locked npm packages when node_modules is missing or older than the lockfile.
# `npm install`, not `npm ci`: ci refuses a lockfile that lacks other platforms' optional
# packages (rollup's, esbuild's), which a registry mirror may not serve; install keeps the
# locked versions and skips optional packages it cannot get.
ensure_modules() {
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm install --no-audit --no-fund --loglevel=error >&2
  fi
}
