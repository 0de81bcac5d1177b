#!/bin/sh
# The kernel-test checks: `checks.sh WHO WORKSPACE`, as the identity under
# test. Prints `QW: PASS name` or `QW: FAIL name: detail` per check.
WHO=$1; WS=$2
cd "$WS" || exit 1
pass() { echo "QW: PASS $WHO $API $1"; }
fail() { echo "QW: FAIL $WHO $API $1: $2"; }
# cgroup v2 for the limits' checks, where this identity may set it up
# (root, at the hierarchy's root); the user has no group delegated to it
# and sees the refusal.
if [ "$(id -u)" = 0 ] && ! grep -q ' /sys/fs/cgroup ' /proc/self/mountinfo; then
    mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null &&
        echo "+memory +pids +cpu" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
fi
# A boot's first process has HOME=/, which qwrap takes as the account's
# home (docs/roots.md); the checks' host-side paths follow it, and one
# verify below runs with HOME=/ itself.
[ "${HOME:-/}" = / ] && export HOME=$(awk -F: -v u="$(id -u)" '$3 == u {print $6}' /etc/passwd)
ABI=$(qwrap inspect --json | tr -d ' \n' | grep -o '"landlock_abi":[0-9]*' | head -n 1 | cut -d: -f2)
echo "QW: $WHO: Landlock ABI ${ABI:-?}"
for API in new legacy; do
    export QWRAP_MOUNT_API=$API
    # The host stays read-only; the workspace is writable.
    qwrap run -- sh -c 'touch /etc/qw-x' 2>/dev/null
    if [ -e /etc/qw-x ]; then fail outside-write "/etc/qw-x was created"; rm -f /etc/qw-x; else pass outside-write; fi
    out=$(qwrap run -- sh -c 'touch ws-file && rm ws-file' 2>&1) && pass workspace-write || fail workspace-write "$(echo "$out" | tr '\n' ' ')"
    # verify: every check passes, the exposures of this kernel accepted by name.
    out=$(qwrap verify --accept-degraded abstract-socket 2>&1); rc=$?
    if [ $rc -eq 0 ]; then pass verify; else fail verify "rc=$rc: $( (echo "$out" | grep -A2 FAIL; [ $rc -eq 125 ] && echo "$out" | tail -n 4) | tr '\n' ' ')"; fi
    if [ $API = new ]; then
        out=$(HOME=/ qwrap verify --accept-degraded abstract-socket 2>&1); rc=$?
        [ $rc -eq 0 ] && pass verify-home-slash || fail verify-home-slash "rc=$rc: $( (echo "$out" | grep -A2 FAIL; echo "$out" | tail -n 3) | tr '\n' ' ')"
    fi
    # The warden's and the terminal's routes, by name in verify's report:
    # host processes signalled, their limits and priority changed, the
    # caller's terminal (a pty stands for it) signalled or left changed.
    for row in "a host process cannot be signalled" "a host process's limits and priority" "the caller's terminal is out of the command's reach" "with no terminal on fds 0-2, the caller's controlling terminal is out of reach"; do
        case "$out" in
            *"PASS $row"*) pass "verify: $row" ;;
            *) fail "verify: $row" "$(echo "$out" | grep -F -A2 "$row" | tr '\n' ' ')" ;;
        esac
    done
    # ...and without accepting them, it says what holds and what does not.
    out=$(qwrap verify 2>&1); rc=$?
    if [ "${ABI:-0}" -lt 6 ]; then
        case "$out" in
            *"FAIL a host abstract socket cannot be reached"*) [ $rc -eq 1 ] && pass verify-honest || fail verify-honest "rc=$rc" ;;
            *) fail verify-honest "no abstract-socket FAIL without Landlock scopes" ;;
        esac
        out=$(qwrap verify --landlock require 2>&1); rc=$?
        [ $rc -eq 125 ] && pass landlock-require-fails-closed || fail landlock-require-fails-closed "rc=$rc"
    else
        [ $rc -eq 0 ] && pass verify-honest || fail verify-honest "rc=$rc"
    fi
    # --isolation landlock: below Landlock ABI 3 refused (nothing runs);
    # from it, the workspace written and the host not.
    out=$(qwrap run --isolation landlock -- sh -c 'touch qw-ll; touch /etc/qw-ll' 2>&1); rc=$?
    if [ -e /etc/qw-ll ]; then
        fail landlock-mode "/etc/qw-ll was made"; rm -f /etc/qw-ll
    elif [ "${ABI:-0}" -lt 3 ]; then
        if [ $rc -eq 125 ] && [ ! -e qw-ll ] && echo "$out" | grep -q "needs Landlock ABI 3"; then pass "landlock-mode (refused: ABI ${ABI:-0})"; else fail landlock-mode "rc=$rc: $(echo "$out" | tr '\n' ' ')"; fi
    elif [ -e qw-ll ]; then
        pass landlock-mode
    else
        fail landlock-mode "rc=$rc: $(echo "$out" | tr '\n' ' ')"
    fi
    rm -f qw-ll
    # Forks never fail because of qwrap: 1,000 pipelines, whose SIGCHLD
    # arrives while the next fork is under way.
    qwrap run -- sh -c 'i=0; while [ $i -lt 1000 ]; do echo x | cat >/dev/null || exit 7; i=$((i+1)); done; echo $i > qw-forks' 2>qw-forks.err; rc=$?
    [ $rc -eq 0 ] && [ "$(cat qw-forks 2>/dev/null)" = 1000 ] && pass fork-pipelines || fail fork-pipelines "rc=$rc, $(cat qw-forks 2>/dev/null) done: $(grep -v '^qwrap: degraded' qw-forks.err | tail -n 2 | tr '\n' ' ')"
    rm -f qw-forks qw-forks.err
    # Limits: the time limit ends the tree (the warden; no cgroup needed),
    # SIGTERM's status. A process limit holds where a group can be made
    # (forks fail inside, and qwrap says how many) or is refused, 125 with
    # the reason: never ignored.
    s=$(date +%s)
    qwrap run --time-limit 1s -- sh -c 'sleep 60 & sleep 60' 2>qw-limit.err; rc=$?
    e=$(( $(date +%s) - s ))
    if [ $rc -eq 143 ] && [ $e -lt 30 ] && grep -q "time limit reached: 1s" qw-limit.err; then pass time-limit; else fail time-limit "rc=$rc after ${e}s: $(tr '\n' ' ' < qw-limit.err)"; fi
    qwrap run --max-processes 20 -- sh -c 'i=0; while [ $i -lt 60 ]; do sleep 30 & i=$((i+1)); done' >/dev/null 2>qw-limit.err; rc=$?
    # The warden says it once the sandbox is gone, just after the command.
    for i in 1 2 3 4 5 6 7 8 9 10; do grep -q "limit reached" qw-limit.err && break; sleep 0.3; done
    if [ $rc -eq 125 ] && grep -q "cannot be enforced here" qw-limit.err; then
        pass "process-limit (refused: no group for $WHO)"
    elif [ $rc -ne 0 ] && grep -q "process limit reached: [0-9]* forks\{0,1\} failed" qw-limit.err; then
        pass process-limit
    else
        fail process-limit "rc=$rc: $(tr '\n' ' ' < qw-limit.err)"
    fi
    # A memory hog: killed with its tree at the limit (137, the line), or
    # refused.
    qwrap run --memory 32M -- sh -c 'dd if=/dev/zero of=/dev/null bs=200M count=1; sleep 2; echo survived' >qw-limit.out 2>qw-limit.err; rc=$?
    for i in 1 2 3 4 5 6 7 8 9 10; do grep -q "limit reached" qw-limit.err && break; sleep 0.3; done
    if [ $rc -eq 125 ] && grep -q "cannot be enforced here" qw-limit.err; then
        pass "memory-limit (refused: no group for $WHO)"
    elif [ $rc -eq 137 ] && ! grep -q survived qw-limit.out && grep -q "memory limit reached" qw-limit.err; then
        pass memory-limit
    else
        fail memory-limit "rc=$rc: $(cat qw-limit.out qw-limit.err | tr '\n' ' ')"
    fi
    rm -f qw-limit.err qw-limit.out
    # A host process survives a signal and keeps its limits (the warden).
    sleep 120 & SP=$!
    before=$(grep 'Max open files' /proc/$SP/limits)
    qwrap run -- sh -c "kill -TERM $SP; kill -KILL $SP" 2>/dev/null
    sleep 0.5
    if [ -d /proc/$SP ] && [ "$(sed 's/.*) //' /proc/$SP/stat | cut -d' ' -f1)" != Z ]; then pass signal-host; else fail signal-host "the host process died"; fi
    kill $SP 2>/dev/null; wait $SP 2>/dev/null
    # ... nor its priority: the warden judges setpriority outside, failing
    # closed where it cannot read the target (the value is read here).
    sleep 120 & SP=$!
    nice_before=$(sed 's/.*) //' /proc/$SP/stat | cut -d' ' -f17)
    qwrap run -- sh -c "renice -n 19 -p $SP" >/dev/null 2>&1
    qwrap run --landlock off -- sh -c "renice -n 19 -p $SP" >/dev/null 2>&1
    nice_after=$(sed 's/.*) //' /proc/$SP/stat | cut -d' ' -f17)
    if [ "$nice_before" = "$nice_after" ]; then pass renice-host; else fail renice-host "nice $nice_before -> $nice_after"; fi
    kill $SP 2>/dev/null; wait $SP 2>/dev/null
    # No setuid file through io_uring (seccomp cannot see its OPENAT).
    if [ -x /qw/uring ]; then
        qwrap run -- /qw/uring qw-suid >/dev/null 2>&1
        if [ -e qw-suid ] && [ -n "$(find qw-suid -perm -2000 -o -perm -4000)" ]; then
            fail io-uring-setuid "$(ls -l qw-suid)"
        else
            pass io-uring-setuid
        fi
        rm -f qw-suid
    else
        echo "QW: SKIP $WHO $API io-uring-setuid: no helper"
    fi
    # A child in a user namespace made inside and a PID hopper are gone
    # when qwrap returns: neither writes its marker afterwards.
    rm -f qw-nested qw-hopper
    printf '%s\n' '[ "$(date +%s)" -ge "$2" ] && { touch "$1"; exit 0; }' 'sh "$0" "$1" "$2" & exit 0' > qw-hop.sh
    # The hopper's deadline: at least a second after the command exits
    # (date counts whole seconds).
    qwrap run -- sh -c "unshare -U sh -c 'sleep 1.5; touch qw-nested' & sh qw-hop.sh qw-hopper \$((\$(date +%s) + 2)) & sleep 0.3" >/dev/null 2>&1
    sleep 3.5
    if [ -e qw-nested ] || [ -e qw-hopper ]; then fail leftovers-nested-and-hopper "$(ls qw-nested qw-hopper 2>/dev/null | tr '\n' ' ')"; else pass leftovers-nested-and-hopper; fi
    rm -f qw-nested qw-hopper qw-hop.sh
    # What the command leaves behind is killed when it exits.
    qwrap run -- sh -c 'setsid sh -c "sleep 301 &" </dev/null >/dev/null 2>&1' 2>/dev/null
    left=yes
    for i in 1 2 3 4 5 6 7 8 9 10; do
        if ps -o args 2>/dev/null | grep -q '^sleep 301'; then sleep 0.3; else left=no; break; fi
    done
    [ $left = no ] && pass leftovers-killed || { fail leftovers-killed "sleep 301 still runs"; pkill -f 'sleep 301'; }
    # The receipt tells the kernel's truth.
    out=$(qwrap receipt --accept-degraded abstract-socket 2>&1)
    case "$out" in *"landlock_abi: ${ABI:-0}"*) pass receipt-abi ;; *) fail receipt-abi "$(echo "$out" | grep landlock_abi)" ;; esac
    if [ "${ABI:-0}" -lt 6 ]; then
        case "$out" in *"degraded_layers: "*"landlock scopes"*) pass receipt-degraded ;; *) fail receipt-degraded "$(echo "$out" | grep degraded)" ;; esac
    fi
    case "$out" in *"result: promote"*) pass receipt-promote ;; *) fail receipt-promote "$(echo "$out" | grep -E 'result|builtin')" ;; esac
    # bwrap mode, on the mount API of this iteration (before Linux 5.12 the
    # legacy one whatever is asked): the host read-only, a bound workspace
    # writable.
    out=$(qwrap bwrap --ro-bind / / --dev /dev --bind "$WS" "$WS" -- sh -c "touch '$WS/ran'; touch /etc/qw-bw" 2>&1)
    if [ -e /etc/qw-bw ]; then
        fail bwrap "/etc/qw-bw was created"; rm -f /etc/qw-bw
    elif [ ! -e "$WS/ran" ]; then
        fail bwrap "$(echo "$out" | tr '\n' ' ')"
    else
        pass bwrap
    fi
    rm -f "$WS/ran"
    # Caches: writable inside, the host's unchanged; where overlayfs cannot
    # hold the layers (Linux < 5.11, or an upper on tmpfs before 6.6) a
    # private tmpfs, and run and inspect say so.
    mkdir -p "$HOME/.cache"
    out=$(qwrap run -- sh -c 'echo x > ~/.cache/qw-cache && cat ~/.cache/qw-cache' 2>&1); rc=$?
    state=$(qwrap inspect 2>/dev/null | grep '^  caches: ')
    if [ -e "$HOME/.cache/qw-cache" ]; then
        fail cache-isolated "the write reached the host"; rm -f "$HOME/.cache/qw-cache"
    elif [ $rc -ne 0 ]; then
        fail cache-isolated "rc=$rc: $(echo "$out" | tr '\n' ' ')"
    else
        case "$state:$out" in
            *"caches: applied"*) pass "cache-isolated (overlay)" ;;
            *"caches: degraded"*"degraded: caches"*) pass "cache-isolated (private tmpfs, reported)" ;;
            *) fail cache-isolated "$state / $(echo "$out" | tr '\n' ' ')" ;;
        esac
    fi
    # Two caches holding files: one overlay of the home serves both (before
    # Linux 6.15 it is attached over the home for the moment its subtrees
    # are cloned); --home overlay keeps a write in the home off the host.
    mkdir -p "$HOME/.npm"; echo held > "$HOME/.npm/held"; echo held > "$HOME/.cache/held"
    out=$(qwrap run -- sh -c 'echo a > ~/.cache/qw-one && echo b > ~/.npm/qw-one && cat ~/.cache/qw-one ~/.npm/qw-one; cat ~/.npm/held 2>/dev/null || echo no-held' 2>/dev/null); rc=$?
    state=$(qwrap inspect 2>/dev/null | grep '^  caches: ')
    out=$(echo "$out" | tr '\n' ' ')
    if [ -e "$HOME/.cache/qw-one" ] || [ -e "$HOME/.npm/qw-one" ]; then
        fail cache-one-overlay "a write reached the host"; rm -f "$HOME/.cache/qw-one" "$HOME/.npm/qw-one"
    else
        # Overlaid, the host's file shows through; in a private tmpfs it
        # does not, and inspect says why.
        case "$rc:$state:$out" in
            "0:"*"(1 overlay mount)"*":a b held ") pass "cache-one-overlay" ;;
            "0:"*"caches: degraded"*":a b no-held ") pass "cache-one-overlay (private tmpfs, reported)" ;;
            *) fail cache-one-overlay "rc=$rc $state / $out" ;;
        esac
    fi
    out=$(qwrap run --home overlay -- sh -c 'echo h > ~/qw-home && cat ~/qw-home' 2>&1); rc=$?
    if [ -e "$HOME/qw-home" ]; then
        fail home-overlay "the write reached the host"; rm -f "$HOME/qw-home"
    elif [ $rc -eq 0 ] && [ "$out" = h ]; then
        pass home-overlay
    elif [ $rc -ne 0 ] && echo "$out" | grep -q "degraded: home"; then
        pass "home-overlay (read-only, reported)"
    else
        fail home-overlay "rc=$rc: $(echo "$out" | tr '\n' ' ')"
    fi
    rm -f "$HOME/.npm/held" "$HOME/.cache/held"
    # --pid private: host processes unseen, the host still read-only, a
    # read-only stdin file not writable through /proc/self/fd (Landlock's
    # file rules are off in that mode, and absent before Linux 5.13), and,
    # unprivileged, a nested user namespace given its maps.
    # The file lies outside the workspace (beside it), read-only inside.
    IN="$WS/../qw-stdin-$WHO"
    echo host-data > "$IN"
    n=$(qwrap run --pid private -- sh -c "touch /etc/qw-pp; echo x >> /proc/self/fd/0; ls /proc | grep -c '^[0-9]'" < "$IN" 2>/dev/null | tail -n 1)
    if [ -e /etc/qw-pp ]; then
        fail pid-private "/etc/qw-pp was created"; rm -f /etc/qw-pp
    elif [ "$(cat "$IN")" != host-data ]; then
        fail pid-private "stdin's file was written"
    elif [ "${n:-99}" -ge 8 ]; then
        fail pid-private "$n processes in view"
    else
        pass pid-private
    fi
    qwrap run -- sh -c 'echo x >> /proc/self/fd/0' < "$IN" 2>/dev/null
    [ "$(cat "$IN")" = host-data ] && pass stdin-sealed || fail stdin-sealed "stdin's file was written"
    rm -f "$IN"
    if [ "$WHO" = user ]; then
        out=$(qwrap run --quiet --pid private -- unshare -Ur id -u 2>&1)
        [ "$out" = 0 ] && pass pid-private-nested || fail pid-private-nested "$(echo "$out" | tr '\n' ' ')"
    fi
    # --network proxied: verify's three egress checks from inside (no route
    # around the proxy, an unlisted name refused, a listed loopback server
    # reached through it).
    out=$(qwrap verify --network proxied --allow-domain example.com --accept-degraded abstract-socket 2>&1); rc=$?
    case "$rc:$out" in
        0:*"PASS a listed destination is reached through the proxy"*) pass egress-proxied ;;
        *) fail egress-proxied "rc=$rc: $( (echo "$out" | grep -E 'FAIL|SKIP.*proxy|egress'; [ $rc -eq 125 ] && echo "$out" | tail -n 4) | tr '\n' ' ')" ;;
    esac
done
