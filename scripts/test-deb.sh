#!/usr/bin/env bash
# Build the .deb (lintian clean at warning level), check the unit with systemd-analyze, then
# install it into a fresh Debian 12 chroot (debootstrap, cached in .cache/) and check what a
# person would: the user and its groups, the conffile, the enabled unit, `iris` answering on
# Debian's Node 18, remove keeping config and state, purge removing them. Ends with
# "deb: N passed, N failed". Needs root (chroot) and Debian's apt.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
IRIS_APT_NEEDS="$IRIS_APT_NEEDS
debootstrap debootstrap
systemd-analyze systemd"
ensure_node || exit 1

passed=0 failed=0
check() { # check "what" command...
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then passed=$((passed + 1)); echo "ok   $what"; else failed=$((failed + 1)); echo "FAIL $what"; fi
}

mkdir -p .cache
deb=$(bash scripts/build-deb.sh 2>.cache/build-deb.log) || { tail -20 .cache/build-deb.log; echo "FAIL building the .deb"; echo "deb: 0 passed, 1 failed"; exit 1; }
check "lintian clean (checked by build-deb.sh)" test -f "$deb"
check "systemd-analyze verify" bash -c "[ -z \"\$(systemd-analyze verify --man=no systemd/iris.service 2>&1)\" ]"
check "unit exposure <= 1.5" bash -c "systemd-analyze security --offline=true systemd/iris.service | awk '/Overall exposure/ {exit !(\$(NF-2) <= 1.5)}'"
check "no native addons in an arch:all package" bash -c "! dpkg-deb -c '$deb' | grep -q '\\.node\$'"

# A Debian 12 root with nodejs, made once and kept as a tarball.
base=.cache/bookworm-base.tar
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
mirror=${mirror:-http://deb.debian.org/debian}
root=$(mktemp -d)
cleanup() { umount -R "$root/dev" 2>/dev/null; umount "$root/proc" 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT
if [ ! -f "$base" ]; then
  mkdir -p .cache
  debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null || { echo "FAIL debootstrap"; echo "deb: $passed passed, $((failed + 1)) failed"; exit 1; }
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost\n' > "$root/etc/hosts"
  tar -C "$root" -cf "$base" .
else
  tar -C "$root" -xf "$base"
fi
chmod 755 "$root" # mktemp (and so the tarball's ".") is 0700: the iris user could not reach /
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev"
cp "$deb" "$root/root/"
in_root() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive chroot "$root" /bin/bash -c "$1"; }

check "apt install ./iris_*.deb" in_root "apt-get update -qq && apt-get install -y -qq /root/$(basename "$deb")"
check "user iris exists, in group audio" in_root "id -nG iris | grep -qw audio"
check "/etc/iris/config is a conffile and valid" in_root "grep -qx /etc/iris/config /var/lib/dpkg/info/iris.conffiles && iris config check"
check "iris.service enabled" in_root "test -L /etc/systemd/system/multi-user.target.wants/iris.service"
check "runs on Debian's Node 18" in_root "node --version | grep -q '^v18\\.'"
check "iris ask answers on the local path" in_root "IRIS_SOCKET=/nonexistent iris ask 'what is 17% of 2,340' | grep -qx \"That's 397.8.\""
check "iris say writes speech" in_root "iris say 'Hello from Debian.' --out /tmp/hello.wav && [ \$(stat -c %s /tmp/hello.wav) -gt 20000 ]"
check "iris daemon starts as user iris and stops on SIGTERM" in_root "
  mkdir -p /var/lib/iris /run/iris && chown iris:iris /var/lib/iris /run/iris
  runuser -u iris -- env IRIS_STATE_DIR=/var/lib/iris IRIS_SOCKET=/run/iris/control.sock iris daemon 2>/tmp/daemon.log &
  pid=\$!
  for _ in \$(seq 100); do grep -q ready: /tmp/daemon.log && break; sleep 0.1; done
  runuser -u iris -- env IRIS_SOCKET=/run/iris/control.sock iris status | grep -q 'IRIS is running' || exit 1
  kill -TERM \$pid; wait \$pid; grep -q stopped /tmp/daemon.log"
check "remove keeps config and state" in_root "echo '# edited' >> /etc/iris/config; touch /var/lib/iris/keep; apt-get remove -y -qq iris && test -f /etc/iris/config && test -f /var/lib/iris/keep"
check "purge removes config, state and the enable link" in_root "apt-get purge -y -qq iris && ! test -e /etc/iris && ! test -e /var/lib/iris && ! test -e /etc/systemd/system/multi-user.target.wants/iris.service"

echo "deb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
