#!/usr/bin/env bash
# bubblewrap 0.11.1's own test suite (upstream, unmodified, kept outside this
# repository) against qwrap named `bwrap`: test-run.sh, test-seccomp.py and
# test-specifying-{userns,pidns}.sh, unprivileged and, when run as root, as
# root too. Usage: run.sh SUITE_DIR QWRAP_BINARY. Any failing point fails,
# and so does a run that skips every point.
set -euo pipefail
suite=${1:?suite directory}
bin=${2:?qwrap binary}
[ -f "$suite/test-run.sh" ] || { echo "bwrap-suite: no bubblewrap suite at $suite" >&2; exit 1; }
scratch=$(mktemp -d /var/tmp/qwrap-bwrap-suite.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/bin"
cp "$bin" "$scratch/bin/qwrap"
ln -s qwrap "$scratch/bin/bwrap"
chmod 0755 "$scratch" "$scratch/bin"

# One fresh copy per identity: the suite writes beside itself.
copy() {
    cp -r "$suite" "$scratch/$1"
    cc -o "$scratch/$1/try-syscall" "$scratch/$1/try-syscall.c"
    chmod -R a+rwX "$scratch/$1"
}

run_as() { # who dir
    local who=$1 dir=$2 t
    for t in test-run.sh test-specifying-userns.sh test-specifying-pidns.sh "test-seccomp.py"; do
        local cmd="cd '$dir' && BWRAP='$scratch/bin/bwrap' "
        case $t in
            *.py) cmd+="/usr/bin/python3 $t" ;;
            *) cmd+="bash $t" ;;
        esac
        local log="$scratch/$who-$t.log"
        if [ "$who" = root ]; then
            bash -c "$cmd" >"$log" 2>&1 || { tail -40 "$log"; echo "bwrap-suite: $t failed as $who" >&2; exit 1; }
        else
            su "$who" -s /bin/bash -c "$cmd" >"$log" 2>&1 || { tail -40 "$log"; echo "bwrap-suite: $t failed as $who" >&2; exit 1; }
        fi
        local oks skips
        oks=$(grep -c '^ok ' "$log" || true)
        skips=$(grep -c '^ok .*# SKIP' "$log" || true)
        if grep -q '^not ok' "$log"; then
            grep '^not ok' "$log"; echo "bwrap-suite: $t failed as $who" >&2; exit 1
        fi
        # A suite that skips everything ("bwrap is not working at all")
        # passes nothing.
        if [ "$oks" -le "$skips" ] || grep -q '^1\.\.0 # SKIP' "$log"; then
            grep '^1\.\.0' "$log" || true; echo "bwrap-suite: $t ran no point as $who" >&2; exit 1
        fi
        printf 'bwrap-suite: %-28s as %-6s %3d ok (%d skipped)%s\n' "$t" "$who" "$oks" "$skips" "${QWRAP_MOUNT_API:+ (mount API: $QWRAP_MOUNT_API)}"
    done
}

if [ "$(id -u)" = 0 ]; then
    copy user
    run_as nobody "$scratch/user"
    copy root
    run_as root "$scratch/root"
else
    copy user
    run_as "$(id -un)" "$scratch/user"
fi
