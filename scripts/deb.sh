#!/bin/sh
# Builds target/deb/qwrap_VERSION_ARCH.deb from the static binary with
# dpkg-deb: deb.sh STATIC_BIN.
set -eu
bin=$1
gen=$(dirname "$bin")/qwrap-generated
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
arch=$(dpkg --print-architecture)
out=target/deb
pkg=$out/qwrap_${version}_$arch
rm -rf "$pkg"
mkdir -p "$pkg/DEBIAN"
sh scripts/install.sh "$bin" "$gen" "$pkg" /usr >/dev/null
# Debian's layout: man pages compressed, the profile in /etc, the licence
# in copyright.
gzip -9n "$pkg"/usr/share/man/man1/*.1 "$pkg"/usr/share/man/man5/*.5
# The package's own profile: /etc/apparmor.d/qwrap, profile qwrap, for
# /usr/bin/qwrap (make install's are named after their path).
mkdir -p "$pkg/etc/apparmor.d"
sed "s|@QWRAP_BIN@|/usr/bin/qwrap|" packaging/apparmor/qwrap > "$pkg/etc/apparmor.d/qwrap"
chmod 0644 "$pkg/etc/apparmor.d/qwrap"
rm -r "$pkg/usr/share/qwrap"
gzip -9n "$pkg/usr/share/doc/qwrap/CHANGELOG.md"
cat > "$pkg/usr/share/doc/qwrap/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: qwrap

Files: *
Copyright: 2026 The qwrap authors
License: MIT or Apache-2.0
 The full texts are in /usr/share/doc/qwrap/LICENSE-MIT and
 /usr/share/doc/qwrap/LICENSE-APACHE.
COPYRIGHT
size=$(du -sk "$pkg/usr" "$pkg/etc" | awk '{s += $1} END {print s}')
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: qwrap
Version: $version
Architecture: $arch
Maintainer: The qwrap authors <maintainers@qwrap.invalid>
Installed-Size: $size
Section: utils
Priority: optional
Description: sandbox for AI coding agents and untrusted commands
 qwrap runs a command behind a read-only view of the whole host: the
 workspace and a calculated set of other roots stay writable, /dev is
 minimal and the network can be private. It calls the kernel itself (user,
 mount and network namespaces, Landlock, seccomp) from one static binary,
 and takes bubblewrap's command line when run as bwrap.
CONTROL
echo /etc/apparmor.d/qwrap > "$pkg/DEBIAN/conffiles"
cat > "$pkg/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
# Loads the AppArmor profile that lets qwrap make user namespaces where
# AppArmor restricts them (Ubuntu 23.10 and later).
set -e
if [ "$1" = configure ] && command -v apparmor_parser >/dev/null \
    && [ -d /sys/kernel/security/apparmor ] && [ -z "${DPKG_ROOT:-}" ]; then
    apparmor_parser -r -W /etc/apparmor.d/qwrap || true
fi
POSTINST
chmod 0755 "$pkg/DEBIAN/postinst"
dpkg-deb --root-owner-group --build "$pkg" "$pkg.deb" >/dev/null
echo "$pkg.deb"
