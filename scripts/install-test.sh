#!/bin/sh
# make install into a scratch DESTDIR, then: the binary runs, man finds its
# pages, and each shell's completion loads.
set -eu
dest=$(mktemp -d /var/tmp/qwrap-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT
make -s install DESTDIR="$dest" PREFIX=/usr/local >/dev/null
root=$dest/usr/local
"$root/bin/qwrap" --version
for page in qwrap qwrap-run qwrap-plan qwrap-inspect qwrap-verify qwrap-receipt qwrap-cache qwrap-bwrap; do
    man -M "$root/share/man" -P cat "$page" 2>/dev/null | grep -q "$page" \
        || { echo "install-test: man $page missing" >&2; exit 1; }
done
man -M "$root/share/man" -P cat 5 qwrap.toml 2>/dev/null | grep -q "QWRAP.TOML" \
    || { echo "install-test: man 5 qwrap.toml missing" >&2; exit 1; }
bash -c ". '$root/share/bash-completion/completions/qwrap' && complete -p qwrap" >/dev/null \
    || { echo "install-test: bash completion does not load" >&2; exit 1; }
if command -v zsh >/dev/null; then
    zsh -fc "fpath=('$root/share/zsh/site-functions' \$fpath); autoload -U compinit; compinit -u; whence -w _qwrap" >/dev/null \
        || { echo "install-test: zsh completion does not load" >&2; exit 1; }
fi
if command -v fish >/dev/null; then
    fish -c "source '$root/share/fish/vendor_completions.d/qwrap.fish'; complete -C 'qwrap ru'" | grep -q run \
        || { echo "install-test: fish completion does not load" >&2; exit 1; }
fi
grep -q "profile usr.local.bin.qwrap /usr/local/bin/qwrap " "$root/share/qwrap/apparmor/usr.local.bin.qwrap"
test -f "$root/share/doc/qwrap/bwrap-compat.md"
# No internal command in the completions, and the modes complete.
! grep -q "__probe" "$root/share/bash-completion/completions/qwrap" \
    || { echo "install-test: __probe in the bash completion" >&2; exit 1; }
grep -q "open closed proxied" "$root/share/bash-completion/completions/qwrap" \
    || { echo "install-test: no values for --network in the bash completion" >&2; exit 1; }
# make uninstall takes it all away again.
make -s uninstall DESTDIR="$dest" PREFIX=/usr/local >/dev/null
left=$(find "$dest" -type f | head -n 5)
[ -z "$left" ] || { echo "install-test: left after uninstall: $left" >&2; exit 1; }
echo "install-test: ok"
