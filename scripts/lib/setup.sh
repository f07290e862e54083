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
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing: ${missing[*]}; run as root or: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
    return 1
  fi
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq >&2 || return 1
  local wanted upgrades
  mapfile -t wanted < <(apt_pinned "${missing[@]}")
  [ "${wanted[*]}" = "${missing[*]}" ] || echo "  pinned to the installed release, so nothing else is upgraded: ${wanted[*]}" >&2
  upgrades=$(apt_upgrades "${wanted[@]}" | awk '{printf "%s %s -> %s, ", $1, $2, $3}')
  [ -z "$upgrades" ] || echo "  apt must also upgrade (the new packages need these versions): ${upgrades%, }" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-upgrade "${wanted[@]}" >&2
}

# The installed packages apt would upgrade to install "$@": lines "package old new".
apt_upgrades() {
  apt-get -s install -y --no-install-recommends --no-upgrade "$@" 2>/dev/null |
    sed -n 's/^Inst \([^ ]*\) \[\([^]]*\)\] (\([^ ]*\) .*/\1 \2 \3/p'
}

# "$@" as apt-get arguments that upgrade nothing installed where the archive allows it: a new
# package whose newest version would drag an installed one up (systemd-container 252.39 needs
# systemd 252.39) is pinned to the installed one's version when the archive still has it
# (systemd-container=252.38-1~deb12u1, from the security suite). One argument a line.
apt_pinned() {
  local upgrades pkg old _new pinned=() p version
  upgrades=$(apt_upgrades "$@")
  if [ -z "$upgrades" ]; then printf '%s\n' "$@"; return; fi
  for p in "$@"; do
    version=
    while read -r pkg old _new; do
      if apt-cache madison "$p" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' | grep -qxF "$old"; then version=$old; break; fi
    done <<<"$upgrades"
    pinned+=("$p${version:+=$version}")
  done
  # Pins that leave apt unable to resolve, or upgrading no less, are dropped.
  if apt-get -s install -y --no-install-recommends --no-upgrade "${pinned[@]}" >/dev/null 2>&1 &&
    [ "$(apt_upgrades "${pinned[@]}" | wc -l)" -lt "$(wc -l <<<"$upgrades")" ]; then
    printf '%s\n' "${pinned[@]}"
  else
    printf '%s\n' "$@"
  fi
}

# What the voice path runs: espeak-ng speaks, sox makes fixtures, arecord/aplay are the
# microphone and speaker, pocketsphinx (with its English model) is the speech to text that
# needs no download, speexdsp cancels IRIS's echo on the microphone (webrtc-audio-processing,
# the other canceller, is built for the tests and the package: scripts/build-webrtc-aec.sh).
IRIS_VOICE_NEEDS="espeak-ng espeak-ng
sox sox
arecord alsa-utils
pocketsphinx_continuous pocketsphinx
/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict pocketsphinx-en-us
/usr/share/pocketsphinx/test/data/goforward.raw pocketsphinx-testdata
/usr/share/doc/libspeexdsp1/copyright libspeexdsp1"

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

# Install the locked npm packages when node_modules is missing or older than the lockfile:
# `npm ci`, which installs exactly the lockfile and never rewrites it. A node_modules that is
# a symlink (a shared checkout's) is left alone: ci would empty the folder it points to.
ensure_modules() {
  if [ -f node_modules/.package-lock.json ] && [ ! package-lock.json -nt node_modules/.package-lock.json ]; then return 0; fi
  if [ -L node_modules ]; then
    echo "node_modules is a symlink to $(readlink node_modules) and older than package-lock.json; not touching it (run npm ci there)" >&2
    return 0
  fi
  echo "installing the npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
}
