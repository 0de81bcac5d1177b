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
# The AppArmor profile names the path the binary is installed at.
profile=$root/share/qwrap/apparmor/qwrap
mkdir -p "$(dirname "$profile")"
sed "s|@QWRAP_BIN@|$prefix/bin/qwrap|" packaging/apparmor/qwrap > "$profile"
chmod 0644 "$profile"
if [ -z "$dest" ] && [ -d /etc/apparmor.d ] && [ -w /etc/apparmor.d ]; then
    install -m 0644 "$profile" /etc/apparmor.d/qwrap
    if command -v apparmor_parser >/dev/null && [ -d /sys/kernel/security/apparmor ]; then
        apparmor_parser -r /etc/apparmor.d/qwrap || echo "install: could not load /etc/apparmor.d/qwrap" >&2
    fi
fi
echo "installed qwrap into $root (man qwrap, qwrap --help)"
