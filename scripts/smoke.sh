#!/bin/sh
# Smoke test of a qwrap binary: as the caller and, when run as root, as the
# unprivileged user nobody. The workspace must be writable, /usr must fail
# with EROFS, and the sandbox must report SANDBOX=qwrap.
set -eu
bin=$1
dir=$(mktemp -d /var/tmp/qwrap-smoke.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cp "$bin" "$dir/qwrap"
chmod 0755 "$dir" "$dir/qwrap"
mkdir "$dir/ws"
script='touch ws-file && rm ws-file && echo "workspace: writable"
if touch /usr/qwrap-smoke 2>"$TMPDIR/err"; then echo "FAIL: /usr writable"; exit 1; fi
grep -q "Read-only file system" "$TMPDIR/err" && echo "/usr: EROFS"
test "$SANDBOX" = qwrap && echo "SANDBOX=$SANDBOX"'
check() {
    out=$("$@" 2>&1) || { echo "$out"; echo "smoke: FAIL ($*)" >&2; exit 1; }
    echo "$out"
    [ "$(echo "$out" | wc -l)" -eq 3 ] || { echo "smoke: FAIL: unexpected output" >&2; exit 1; }
}
cd "$dir/ws"
echo "== as $(id -un)"
check "$dir/qwrap" run -- sh -c "$script"
if [ "$(id -u)" -eq 0 ]; then
    chown -R 65534:65534 "$dir/ws"
    echo "== as nobody"
    check setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent \
        "$dir/qwrap" run -- sh -c "$script"
fi
# Test-only switches do nothing in a release build: Landlock stays as the
# kernel offers it.
abi() { "$@" "$dir/qwrap" inspect --json | tr -d ' \n' | grep -o '"landlock_abi":[0-9]*' | head -1; }
real=$(abi env)
forced=$(abi env QWRAP_TEST_LANDLOCK_ABI=0)
[ -n "$real" ] && [ "$real" = "$forced" ] || { echo "smoke: FAIL: QWRAP_TEST_LANDLOCK_ABI=0 changed a release build ($real, $forced)" >&2; exit 1; }
echo "QWRAP_TEST_LANDLOCK_ABI ignored: $forced"
echo "smoke: ok"
