#!/bin/sh
# With kernel.unprivileged_userns_clone=0: `userns-off.sh WHO WORKSPACE`.
WHO=$1; WS=$2
cd "$WS" || exit 1
pass() { echo "QW: PASS $WHO userns-off $1"; }
fail() { echo "QW: FAIL $WHO userns-off $1: $2"; }
ABI=$(qwrap inspect --json 2>/dev/null | tr -d ' \n' | grep -o '"landlock_abi":[0-9]*' | head -n 1 | cut -d: -f2)
out=$(qwrap run -- touch qw-off 2>&1); rc=$?
if [ -e qw-off ]; then
    fail default "the command ran"; rm -f qw-off
elif [ $rc -eq 125 ] && echo "$out" | grep -q -- "--isolation landlock" && echo "$out" | grep -q unprivileged_userns_clone; then
    pass default
else
    fail default "rc=$rc: $(echo "$out" | tr '\n' ' ')"
fi
out=$(qwrap run --isolation auto -- sh -c 'touch qw-auto; touch /etc/qw-auto' 2>&1); rc=$?
if [ -e /etc/qw-auto ]; then
    fail auto "/etc/qw-auto was made"
elif [ "${ABI:-0}" -lt 3 ]; then
    # No Landlock-only sandbox below ABI 3: refused, nothing ran.
    if [ $rc -eq 125 ] && [ ! -e qw-auto ] && echo "$out" | grep -q "needs Landlock ABI 3"; then pass "auto (refused: Landlock ABI ${ABI:-0})"; else fail auto "rc=$rc: $(echo "$out" | tr '\n' ' ')"; fi
else
    if [ -e qw-auto ] && echo "$out" | grep -q "degraded: isolation"; then pass auto; else fail auto "rc=$rc: $(echo "$out" | tr '\n' ' ')"; fi
fi
rm -f qw-auto
