#!/usr/bin/env bash
# Build the .deb (lintian clean at warning level), check the unit with systemd-analyze, run
# piuparts, then install it into a Debian 12 root (debootstrap, cached in .cache/), boot a real
# systemd there with systemd-nspawn, and check what a person would: the service active and
# sandboxed (the IP filter enforced), `iris status`/`ask`/`say` on Debian's Node 18, the voice
# (models loaded, no microphone reported) and `iris listen` on a spoken request, a config edit
# applied by `systemctl reload` (and a broken one refused), an upgrade keeping the edit and
# the timers, remove keeping config and state, purge removing them. Ends with "deb: N passed,
# N failed". Needs root and Debian's apt.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
ensure_node "debootstrap debootstrap
systemd-analyze systemd
systemd-nspawn systemd-container
piuparts piuparts" || exit 1

passed=0 failed=0
check() { # check "what" command...  (IRIS_DEB_VERBOSE=1 shows the commands' output)
  local what=$1; shift
  if [ -n "${IRIS_DEB_VERBOSE:-}" ]; then "$@"; local rc=$?; else "$@" >/dev/null 2>&1; local rc=$?; fi
  if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); echo "ok   $what"; else failed=$((failed + 1)); echo "FAIL $what"; fi
}

# A Debian 12 root with systemd and nodejs (piuparts needs them preinstalled), made once.
# `test-deb.sh --base` only makes it (scripts/test.sh does that in the background while the
# unit tests run); it is written under a temporary name, so a half-made one is never used.
base=.cache/bookworm-systemd.tgz
# lintian runs in a root of its own: on the host its XS perl modules would upgrade the host's
# perl (5.36.0-7+deb12u2 → u4, seen on a fresh machine), and that root stays out of the
# install and boot test's clean one.
lint_base=.cache/bookworm-lintian.tgz
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
mirror=${mirror:-http://deb.debian.org/debian}
root=$(mktemp -d)
nspawn_pid= piuparts_pid=
cleanup() {
  [ -n "$nspawn_pid" ] && kill -TERM "$nspawn_pid" 2>/dev/null && wait "$nspawn_pid" 2>/dev/null
  [ -n "$piuparts_pid" ] && kill -TERM "$piuparts_pid" 2>/dev/null && wait "$piuparts_pid" 2>/dev/null
  rm -rf "$root"
}
trap cleanup EXIT
one_shot() { systemd-nspawn -q -D "$root" --register=no --keep-unit env DEBIAN_FRONTEND=noninteractive sh -c "$1" 2>&1 | grep -v 'Attempted to remove disk file system'; return "${PIPESTATUS[0]}"; }
make_base() {
  mkdir -p .cache
  debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null || return 1
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  one_shot "apt-get update -qq && apt-get install -y -qq --no-install-recommends systemd nodejs >/dev/null && apt-get clean" >/dev/null || return 1
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
  tar -C "$root" -czf "$base.part" . && mv "$base.part" "$base"
}
# The lintian root: the base plus lintian (in a root of its own, made from the base tarball).
make_lint_base() {
  local lint_root
  lint_root=$(mktemp -d) && tar -C "$lint_root" -xzf "$base" || return 1
  systemd-nspawn -q -D "$lint_root" --register=no --keep-unit env DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get install -y -qq --no-install-recommends lintian >/dev/null && apt-get clean" 2>&1 \
    | grep -v 'Attempted to remove disk file system'
  [ "${PIPESTATUS[0]}" -eq 0 ] && tar -C "$lint_root" -czf "$lint_base.part" . && mv "$lint_base.part" "$lint_base"
  local rc=$?; rm -rf "$lint_root"; return $rc
}
if [ "${1:-}" = --base ]; then
  [ -f "$base" ] || make_base || { echo "FAIL making the Debian 12 root ($base)" >&2; exit 1; }
  [ -f "$lint_base" ] || make_lint_base || { echo "FAIL making the lintian root ($lint_base)" >&2; exit 1; }
  exit 0
fi
if [ -f "$base" ]; then
  tar -C "$root" -xzf "$base"
else
  make_base || { echo "FAIL debootstrap"; echo "deb: $passed passed, $((failed + 1)) failed"; exit 1; }
fi
[ -f "$lint_base" ] || make_lint_base || { echo "FAIL making the lintian root"; echo "deb: $passed passed, $((failed + 1)) failed"; exit 1; }
lint_root=$(mktemp -d)
trap 'cleanup; rm -rf "$lint_root"' EXIT
tar -C "$lint_root" -xzf "$lint_base"

mkdir -p .cache
deb=$(IRIS_LINT_ROOT=$lint_root bash scripts/build-deb.sh 2>.cache/build-deb.log) || { tail -20 .cache/build-deb.log; echo "FAIL building the .deb"; echo "deb: 0 passed, 1 failed"; exit 1; }
check "lintian clean (checked by build-deb.sh)" test -f "$deb"
check "systemd-analyze verify" bash -c "[ -z \"\$(systemd-analyze verify --man=no systemd/iris.service 2>&1)\" ]"
check "unit exposure <= 1.5" bash -c "systemd-analyze security --offline=true systemd/iris.service | awk '/Overall exposure/ {exit !(\$(NF-2) <= 1.5)}'"
ort_arch=$([ "$(dpkg --print-architecture)" = arm64 ] && echo arm64 || echo x64)
check "native parts for this architecture only, whisper-server built in" bash -c "dpkg-deb -c '$deb' > /tmp/iris-deb-files && ! grep -E 'napi-v6/(darwin|win32)|linux/(arm64|x64)/' /tmp/iris-deb-files | grep -v 'linux/$ort_arch/' | grep -q . && grep -q 'linux/$ort_arch/onnxruntime_binding.node' /tmp/iris-deb-files && grep -q 'usr/lib/iris/bin/whisper-server\$' /tmp/iris-deb-files && grep -q 'koffi/build/koffi/linux_$ort_arch/koffi.node' /tmp/iris-deb-files && [ \$(grep -c 'koffi/build/koffi/.*/koffi.node' /tmp/iris-deb-files) = 1 ]"

check "the webrtc echo canceller's shim is in the package" grep -q 'usr/lib/iris/lib/libiris-webrtc-aec.so$' /tmp/iris-deb-files

chmod 755 "$root" # mktemp (and so the tarball's ".") is 0700: the iris user could not reach /
cp /etc/resolv.conf "$root/etc/resolv.conf"

# piuparts (install, remove, purge, install in a root of its own: ~20 s) runs beside the boot test.
piuparts -b "$PWD/$base" -d bookworm -m "$mirror" --no-upgrade-test --install-remove-install "$deb" >.cache/piuparts.log 2>&1 &
piuparts_pid=$!

# Install, then boot a real systemd in a container and look at the running service.
cp "$deb" "$root/root/"
check "apt install ./iris_*.deb" one_shot "apt-get update -qq && apt-get install -y -qq /root/$(basename "$deb")"
# Unified cgroups, bpf() and all capabilities for the container's systemd: without them it
# cannot attach the unit's IPAddressDeny/DeviceAllow programs and silently skips them.
SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 systemd-nspawn -D "$root" --register=no --keep-unit \
  --capability=all --system-call-filter="bpf @privileged" -b >"$root.boot.log" 2>&1 &
nspawn_pid=$!
init=
# The container's PID 1 is systemd once nspawn has exec'd it; before that the child is nspawn's.
for _ in $(seq 200); do
  init=$(pgrep -P "$nspawn_pid" | head -n 1)
  [ -n "$init" ] && [ "$(cat "/proc/$init/comm" 2>/dev/null)" = systemd ] && break
  sleep 0.1
done
in_root() { nsenter -t "$init" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive sh -c "$1"; }
# Until its D-Bus is up, systemctl inside cannot even ask how the boot goes.
for _ in $(seq 300); do in_root "systemctl is-system-running" 2>/dev/null | grep -Eq 'initializing|starting|running|degraded' && break; sleep 0.1; done
check "systemd boots (running or degraded)" in_root "timeout 60 systemctl is-system-running --wait | grep -Eq 'running|degraded'"
check "iris.service active (Type=notify: READY came)" in_root "systemctl is-active iris"
check "user iris exists, in group audio" in_root "id -nG iris | grep -qw audio"
check "runs on Debian's Node 18" in_root "node --version | grep -q '^v18\.'"
check "sandboxed: no capabilities, no new privileges, seccomp" in_root "grep -q '^CapEff:[[:space:]]*0*$' /proc/\$(systemctl show iris -p MainPID --value)/status && grep -q '^NoNewPrivs:[[:space:]]*1' /proc/\$(systemctl show iris -p MainPID --value)/status"
# A process moved into the service's cgroup gets its IP filter: loopback still answers, and a
# connection that is refused from the container's shell is dropped from inside the service.
cp scripts/lib/ip-probe.cjs "$root/root/"
check "IPAddressDeny enforced: the service's cgroup reaches loopback only" in_root "
  node /root/ip-probe.cjs | grep -q 'loopback=ok away=answered:' &&
  cg=\$(systemctl show iris -p ControlGroup --value) && echo \$\$ > /sys/fs/cgroup\$cg/cgroup.procs &&
  node /root/ip-probe.cjs | grep -qx 'loopback=ok away=dropped'"
check "iris status answers through the socket" in_root "iris status | grep -q 'IRIS is running'"
check "iris ask answers through the daemon" in_root "iris ask 'what is 17% of 2,340' | grep -qx \"That's 397.8.\""
check "the webrtc shim loads with the package's dependencies (koffi, libwebrtc-audio-processing1)" in_root "node -e \"const k = require('/usr/lib/iris/node_modules/koffi'); const lib = k.load('/usr/lib/iris/lib/libiris-webrtc-aec.so'); const create = lib.func('void *iris_aec_create(int, int, int, int, int, int, int)'); const st = create(16000, 0, 2, 1, 0, -1, 1); if (!st) process.exit(1); lib.func('void iris_aec_destroy(void *)')(st)\""
check "iris say writes speech" in_root "iris say 'Hello from Debian.' --out /tmp/hello.wav && [ \$(stat -c %s /tmp/hello.wav) -gt 20000 ]"
check "the tokenizer loads from the package (iris tools budget: 325 native tokens)" in_root "iris tools budget | grep -q '(native 325,'"
check "voice: models load in the sandbox, no microphone is reported and retried" in_root "
  for _ in \$(seq 300); do iris status --json | grep -q '\"state\": \"no_microphone\"' && break; sleep 0.1; done
  iris status --json | grep -q '\"state\": \"no_microphone\"' && systemctl is-active iris &&
  journalctl -u iris --no-pager | grep -q 'speech to text: pocketsphinx' && journalctl -u iris --no-pager | grep -q 'no microphone: .*retrying'"
# The request in a flite voice, made here: pocketsphinx hears flite's voices with confidence,
# espeak-ng's (iris say) rarely, and IRIS does not act on what it is unsure of.
flite -voice rms -t 'hey jarvis, what time is it in Tokyo' -o "$root/root/spoken.wav"
sox -D "$root/root/spoken.wav" -r 16000 -c 1 "$root/root/request.wav" pad 0.5 1.5
check "iris listen: a spoken request answered aloud, the daemon's state untouched" in_root "
  set -e; iris listen --file /root/request.wav --out /tmp/reply.wav --json > /tmp/listen.json
  grep -q '\"transcript\": \"what time is it in tokyo\"' /tmp/listen.json && grep -Eq '\"reply\": \"It.s [0-9:]+ [AP]M in Tokyo' /tmp/listen.json
  [ \$(stat -c %s /tmp/reply.wav) -gt 20000 ] && [ -z \"\$(find /var/lib/iris ! -user iris)\" ]"
check "config edit + systemctl reload applies it" in_root "sed -i 's/^#calculator = true/calculator = false/' /etc/iris/config && systemctl reload iris && iris tools call calculator '{\"expression\":\"1+1\"}' | grep -q 'switched off'"
check "a broken config fails the reload and is not applied" in_root "cp /etc/iris/config /tmp/good; echo 'oops = [' >> /etc/iris/config; ! systemctl reload iris && systemctl is-active iris && iris ask 'what time is it' | grep -q '^It' ; cp /tmp/good /etc/iris/config"
check "upgrade keeps the edited config and state" in_root "
  set -e; iris ask 'set a timer for 30 minutes' >/dev/null
  cd /tmp && dpkg-deb -R /root/$(basename "$deb") up && sed -i 's/^Version: .*/Version: 0.1.1/' up/DEBIAN/control && dpkg-deb -b up up.deb >/dev/null
  apt-get install -y -qq -o Dpkg::Options::=--force-confold ./up.deb >/dev/null
  grep -qx 'calculator = false' /etc/iris/config && dpkg-query -W -f='\${Version}' iris | grep -qx 0.1.1
  systemctl is-active iris && iris timers list | grep -q 'timer'"
check "remove keeps config and state" in_root "apt-get remove -y -qq iris && test -f /etc/iris/config && test -f /var/lib/iris/timers.json"
check "purge removes config, state and the enable link" in_root "apt-get purge -y -qq iris && ! test -e /etc/iris && ! test -e /var/lib/iris && ! test -e /etc/systemd/system/multi-user.target.wants/iris.service"

check "piuparts: install, remove, purge, install (log: .cache/piuparts.log)" wait "$piuparts_pid"; piuparts_pid=

echo "deb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
