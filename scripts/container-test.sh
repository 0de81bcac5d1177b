#!/bin/sh
# qwrap in a real container runtime: Podman with its default seccomp
# profile (namespaces allowed: the default mode must keep working) and with
# a copy of it that refuses namespaces and mounts as Docker's default does
# (the default mode must fail closed naming --isolation landlock, which must
# confine). The image is built from this host's own files: the static qwrap
# and busybox. The checks run as an unprivileged container user, without
# --privileged. Where podman cannot start a container here, says SKIP.
#
# usage: scripts/container-test.sh STATIC_QWRAP
set -eu

qwrap_bin=$1
fail() { echo "container-test: FAIL: $*" >&2; exit 1; }
say() { echo "container-test: $*"; }

command -v podman >/dev/null || { say "SKIP: podman is not installed"; exit 0; }
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && file "$busybox" | grep -q "statically linked" ||
    { say "SKIP: no statically linked busybox for the image"; exit 0; }

work=$(mktemp -d)
trap 'rm -rf "$work"; podman rmi -f qwrap-container-test >/dev/null 2>&1 || true' EXIT

# The image: busybox, qwrap, a user, a workspace and a home it owns.
root=$work/rootfs
mkdir -p "$root/bin" "$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/home/user/.ssh" \
    "$root/work" "$root/proc" "$root/dev" "$root/sys" "$root/root"
cp "$busybox" "$root/bin/busybox"
for c in sh cat echo touch kill sleep ls mkdir rm id env test true chmod grep; do
    ln -s busybox "$root/bin/$c"
done
cp "$qwrap_bin" "$root/usr/local/bin/qwrap"
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\n' > "$root/etc/group"
echo "SECRET-KEY-IN-CONTAINER" > "$root/home/user/.ssh/id_ed25519"
chmod 1777 "$root/tmp"
chmod 700 "$root/home/user/.ssh"
chmod 600 "$root/home/user/.ssh/id_ed25519"
chown -R 1000:1000 "$root/home/user" "$root/work"
tar -C "$root" -c . | podman import - qwrap-container-test >/dev/null 2>&1

# A profile refusing what Docker's default refuses without CAP_SYS_ADMIN:
# namespace flags to clone, clone3 (ENOSYS), unshare, setns and the mounts.
python3 - /usr/share/containers/seccomp.json "$work/no-namespaces.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
refused = {"clone", "clone3", "fsopen", "fsmount", "fsconfig", "mount", "mount_setattr", "move_mount",
           "open_tree", "pivot_root", "setns", "umount2", "unshare"}
for s in p["syscalls"]:
    if s["action"] == "SCMP_ACT_ALLOW" and not s.get("includes"):
        s["names"] = [n for n in s["names"] if n not in refused]
p["syscalls"] = [s for s in p["syscalls"] if s["names"] and "setns" not in s["names"]]
p["syscalls"].append({"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                      "args": [{"index": 0, "value": 0x7E020000, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]})
p["syscalls"].append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38})
json.dump(p, open(sys.argv[2], "w"))
EOF

# How podman runs here: as it is, or (nested in another container, with
# cgroup v1 or tight limits) with runc, cgroupfs and the limits it has.
run=""
for opts in "" "--runtime runc --cgroup-manager cgroupfs" ; do
    extra="--ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=4096:4096"
    for limits in "" "$extra"; do
        # shellcheck disable=SC2086
        if out=$(podman $opts run --rm $limits --user 1000:1000 qwrap-container-test true 2>&1); then
            run="podman $opts run --rm $limits --user 1000:1000"
            break 2
        fi
        last=$out
    done
done
[ -n "$run" ] || { say "SKIP: podman cannot start a container here: $last"; exit 0; }
say "running containers with: $run"

# (a) Podman's default profile: the namespaces mode works and verifies.
out=$($run qwrap-container-test sh -c '
    cd /work
    qwrap run -- sh -c "echo in > made" && cat made
    qwrap verify >/dev/null 2>&1 && echo verified' 2>&1) || true
echo "$out" | grep -qx in || fail "default profile: run did not write the workspace: $out"
echo "$out" | grep -qx verified || fail "default profile: verify did not pass: $out"
say "PASS default profile: namespaces mode runs and verifies"

# (b) Namespaces and mounts refused.
out=$($run --security-opt seccomp="$work/no-namespaces.json" qwrap-container-test sh -c '
    cd /work
    qwrap run -- touch ran-default; echo "default=$?"
    qwrap bwrap --unshare-user --ro-bind / / touch ran-bwrap; echo "bwrap=$?"
    test -e ran-default || test -e ran-bwrap && echo "UNCONFINED RUN"
    sleep 300 & outside=$!
    qwrap run --isolation landlock -- sh -c "
        echo in > made-landlock
        echo x > /home/user/planted
        cat /home/user/.ssh/id_ed25519
        kill -9 $outside" ; echo "landlock=$?"
    test -e made-landlock && echo workspace-written
    test -e /home/user/planted && echo HOME-WRITTEN
    kill -0 $outside && echo outside-alive
    qwrap run --isolation auto -- true && echo auto-ran
    qwrap verify --isolation landlock >/dev/null 2>&1 && echo landlock-verified
    kill $outside' 2>&1) || true
echo "$out" | grep -q "default=125" || fail "refused namespaces: run did not fail closed: $out"
[ "$(echo "$out" | grep -c -- "--isolation landlock")" -ge 2 ] ||
    fail "refused namespaces: run's and bwrap mode's hints do not both name --isolation landlock: $out"
echo "$out" | grep -q "bwrap=0" && fail "refused namespaces: bwrap mode ran: $out"
echo "$out" | grep -q "UNCONFINED RUN" && fail "a command ran although its sandbox could not start: $out"
echo "$out" | grep -qx workspace-written || fail "landlock: the workspace was not written: $out"
echo "$out" | grep -q HOME-WRITTEN && fail "landlock: the home was written: $out"
echo "$out" | grep -q SECRET-KEY-IN-CONTAINER && fail "landlock: a hidden file was read: $out"
echo "$out" | grep -qx outside-alive || fail "landlock: a process outside the sandbox was killed: $out"
echo "$out" | grep -q "qwrap: degraded: isolation:" || fail "auto: no degraded line: $out"
echo "$out" | grep -qx auto-ran || fail "auto: did not run: $out"
echo "$out" | grep -qx landlock-verified || fail "landlock: verify did not pass: $out"
say "PASS namespaces refused: the default mode and bwrap mode fail closed naming --isolation landlock; landlock confines and verifies; auto falls back"
