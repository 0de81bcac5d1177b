#!/bin/sh
# Installs target/deb/qwrap_*.deb with dpkg into a scratch root (no chroot,
# no container) and runs qwrap from there: --version, man, and verify in a
# scratch workspace, as root and, when root, as nobody.
set -eu
deb=$(ls -t target/deb/qwrap_*.deb | head -n 1)
root=$(mktemp -d /var/tmp/qwrap-deb.XXXXXX)
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-script-chrootless --force-not-root -i "$deb" >/dev/null
dpkg --root="$root" -s qwrap | grep -q '^Status: install ok installed'
bin=$root/usr/bin/qwrap
"$bin" --version
man -M "$root/usr/share/man" -P cat qwrap-bwrap 2>/dev/null | grep -q "qwrap-bwrap"
grep -q "profile qwrap /usr/bin/qwrap " "$root/etc/apparmor.d/qwrap"
ws=$root/ws
mkdir "$ws"
(cd "$ws" && "$bin" verify) | tail -n 1
if [ "$(id -u)" -eq 0 ]; then
    chown 65534:65534 "$ws"
    (cd "$ws" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$bin" verify) | tail -n 1
fi
echo "deb-test: ok ($(basename "$deb"))"
