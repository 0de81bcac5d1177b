#!/bin/sh
# Installs qwrap: install.sh BIN GENERATED DESTDIR PREFIX.
# GENERATED holds man/ and completions/ from the build.
set -eu
bin=$1 gen=$2 dest=$3 prefix=$4
root=$dest$prefix
install -D -m 0755 "$bin" "$root/bin/qwrap"
for page in "$gen"/man/*.1 packaging/man/*.1; do
    install -D -m 0644 "$page" "$root/share/man/man1/$(basename "$page")"
done
install -D -m 0644 packaging/man/qwrap.toml.5 "$root/share/man/man5/qwrap.toml.5"
install -D -m 0644 "$gen/completions/qwrap.bash" "$root/share/bash-completion/completions/qwrap"
install -D -m 0644 "$gen/completions/_qwrap" "$root/share/zsh/site-functions/_qwrap"
install -D -m 0644 "$gen/completions/qwrap.fish" "$root/share/fish/vendor_completions.d/qwrap.fish"
doc=$root/share/doc/qwrap
for f in README.md CHANGELOG.md config.example.toml LICENSE-MIT LICENSE-APACHE docs/*.md; do
    install -D -m 0644 "$f" "$doc/$(basename "$f")"
done
# The AppArmor profile names the path the binary is installed at, and is
# named after it (usr.local.bin.qwrap, as AppArmor names profiles by
# path): the Debian package's own (/etc/apparmor.d/qwrap, for /usr/bin)
# and this one never overwrite each other.
name=$(echo "$prefix/bin/qwrap" | sed 's|^/||; s|/|.|g')
profile=$root/share/qwrap/apparmor/$name
mkdir -p "$(dirname "$profile")"
sed "s|@QWRAP_BIN@|$prefix/bin/qwrap|; s|^profile qwrap |profile $name |" packaging/apparmor/qwrap > "$profile"
chmod 0644 "$profile"
if [ -z "$dest" ] && [ -d /etc/apparmor.d ] && [ -w /etc/apparmor.d ]; then
    install -m 0644 "$profile" "/etc/apparmor.d/$name"
    if command -v apparmor_parser >/dev/null && [ -d /sys/kernel/security/apparmor ]; then
        apparmor_parser -r "/etc/apparmor.d/$name" || echo "install: could not load /etc/apparmor.d/$name" >&2
    fi
fi
echo "installed qwrap into $root (man qwrap, qwrap --help)"
