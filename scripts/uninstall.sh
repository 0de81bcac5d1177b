#!/bin/sh
# Removes what install.sh installed: uninstall.sh DESTDIR PREFIX.
set -eu
dest=$1 prefix=$2
root=$dest$prefix
name=$(echo "$prefix/bin/qwrap" | sed 's|^/||; s|/|.|g')
rm -f "$root/bin/qwrap" \
    "$root"/share/man/man1/qwrap.1 "$root"/share/man/man1/qwrap-*.1 "$root/share/man/man5/qwrap.toml.5" \
    "$root/share/bash-completion/completions/qwrap" "$root/share/zsh/site-functions/_qwrap" \
    "$root/share/fish/vendor_completions.d/qwrap.fish"
rm -rf "$root/share/doc/qwrap" "$root/share/qwrap"
if [ -z "$dest" ] && [ -f "/etc/apparmor.d/$name" ]; then
    if command -v apparmor_parser >/dev/null && [ -d /sys/kernel/security/apparmor ]; then
        apparmor_parser -R "/etc/apparmor.d/$name" 2>/dev/null || true
    fi
    rm -f "/etc/apparmor.d/$name"
fi
echo "removed qwrap from $root"
