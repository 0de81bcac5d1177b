#!/bin/sh
# The Debian userland stage's checks: `debian.sh WHO WORKSPACE MODE...`, as
# the identity under test, with Debian 12's own dash, bash, busybox and make
# (a fork that fails inside the sandbox showed there, not with the static
# busybox of the other stages). In each MODE (bare: no qwrap, the control;
# default: qwrap run; landlock-off: qwrap run --landlock off) each shell runs
# 400 pipelines and make -j4 builds 200 targets of a shell command each.
# Prints `QW: PASS WHO MODE name (N s)` or `QW: FAIL WHO MODE name: detail`.
WHO=$1; WS=$2; shift 2
cd "$WS" || exit 1
pass() { echo "QW: PASS $WHO $MODE $1"; }
fail() { echo "QW: FAIL $WHO $MODE $1: $2"; }
# A hung check ends as a FAIL, and the next one still runs.
T=${QW_CHECK_TIMEOUT:-600}
qw() {
    case $MODE in
        bare) timeout -k 5 "$T" "$@" ;;
        default) timeout -k 5 "$T" qwrap run -- "$@" ;;
        landlock-off) timeout -k 5 "$T" qwrap run --landlock off -- "$@" ;;
    esac
}
# What the command said on stderr, less qwrap's degraded notes.
said() { grep -v '^qwrap: degraded' "$1" | tail -n 2 | tr '\n' ' '; }
why() { [ "$1" -eq 124 ] && echo "timed out after $T s" || echo "rc=$1"; }

# 400 pipelines, whose SIGCHLD arrives while the next fork is under way;
# each cat appends its line to qw-n, which counts those that ran (a shell
# that cannot fork stops there).
LOOP='i=0; while [ $i -lt 400 ]; do echo x | cat >> qw-n || exit 7; i=$((i+1)); done'
pipelines() { # NAME SHELL...
    name=$1; shift
    rm -f qw-n qw-err
    t0=$(date +%s)
    qw "$@" -c "$LOOP" 2>qw-err; rc=$?
    t=$(($(date +%s) - t0))
    n=$(grep -c '^x$' qw-n 2>/dev/null)
    if [ $rc -eq 0 ] && [ "$n" = 400 ]; then
        pass "$name-pipelines ($t s)"
    else
        fail "$name-pipelines" "$(why $rc), ${n:-0} of 400 done: $(said qw-err)"
    fi
    rm -f qw-n qw-err
}

# make -j4 of 200 targets, each a shell command (a pipeline) writing its
# own name into out/tN.
mkdir -p qw-mk
{
    printf 'all:'
    i=1; while [ $i -le 200 ]; do printf ' out/t%d' $i; i=$((i+1)); done
    printf '\n\nout/t%%:\n\t@echo $* | cat > $@\n'
} > qw-mk/Makefile
make_j4() {
    rm -rf qw-mk/out qw-err && mkdir qw-mk/out
    t0=$(date +%s)
    qw make -s -j4 -C qw-mk >/dev/null 2>qw-err; rc=$?
    t=$(($(date +%s) - t0))
    n=0
    for f in qw-mk/out/t*; do
        [ -f "$f" ] && read -r v < "$f" && [ "$v" = "${f##*/t}" ] && n=$((n + 1))
    done
    if [ $rc -eq 0 ] && [ $n -eq 200 ]; then
        pass "make-j4 ($t s)"
    else
        fail make-j4 "$(why $rc), $n of 200 outputs: $(said qw-err)"
    fi
    rm -rf qw-mk/out qw-err
}

# No cgroup namespace inside (a cgroup filesystem mounted in one reaches
# the host's groups below the caller's): refused with --pid private, where
# a user namespace (the control) is not.
cgroupns() {
    if ! qwrap run --pid private -- unshare -U true 2>qw-err; then
        fail cgroupns-refused "the control, unshare -U, failed: $(said qw-err)"
    elif qwrap run --pid private -- unshare -U -C true 2>/dev/null; then
        fail cgroupns-refused "unshare -U -C ran"
    else
        pass cgroupns-refused
    fi
    rm -f qw-err
}

for MODE in "$@"; do
    pipelines dash dash
    pipelines bash bash
    pipelines busybox-sh busybox sh
    make_j4
    [ "$MODE" = default ] && cgroupns
done
rm -rf qw-mk
