#!/bin/sh
# Checks on an initramfs root (rootfs, where pivot_root(2) is refused), run
# before the VM switches to its tmpfs root: `initramfs.sh WHO WORKSPACE`.
# /qw-secret lies on rootfs, outside every view these sandboxes give.
WHO=$1; WS=$2
cd "$WS" || exit 1
pass() { echo "QW: PASS $WHO initramfs $1"; }
fail() { echo "QW: FAIL $WHO initramfs $1: $2"; }
for API in new legacy; do
    export QWRAP_MOUNT_API=$API
    qwrap run -- sh -c 'touch /etc/qw-x' 2>/dev/null
    if [ -e /etc/qw-x ]; then fail "$API-outside-write" "/etc/qw-x was created"; rm -f /etc/qw-x; else pass "$API-outside-write"; fi
    out=$(qwrap run -- sh -c 'touch ws-file && rm ws-file' 2>&1) && pass "$API-workspace-write" || fail "$API-workspace-write" "$(echo "$out" | tr '\n' ' ')"
done
unset QWRAP_MOUNT_API
# The minimal view: rootfs lies beneath its root, unreachable even by
# unmounting that root.
out=$(qwrap run --view minimal -- sh -c 'umount -l / 2>/dev/null; cat /qw-secret' 2>&1)
case "$out" in
    *initramfs-secret*) fail minimal-view "the initramfs beneath the root was read" ;;
    *"No such file"*) pass minimal-view ;;
    *) fail minimal-view "$(echo "$out" | tr '\n' ' ')" ;;
esac
# bwrap mode needs mount_setattr(2) (Linux 5.12); run mode's checks above
# cover older kernels.
if [ "$(uname -r | awk -F. '{print ($1 > 5 || ($1 == 5 && $2 >= 12)) ? 1 : 0}')" = 0 ]; then
    exit 0
fi
# bwrap mode: the same, and a sandbox keeping CAP_SYS_ADMIN is refused.
B="qwrap bwrap --unshare-user --ro-bind /bin /bin --proc /proc --bind $WS $WS --chdir $WS"
out=$($B --uid 1001 --gid 1001 -- sh -c 'touch ok && rm ok && umount -l / 2>/dev/null; cat /qw-secret' 2>&1)
case "$out" in
    *initramfs-secret*) fail bwrap "the initramfs beneath the root was read" ;;
    *"No such file"*) pass bwrap ;;
    *) fail bwrap "$(echo "$out" | tr '\n' ' ')" ;;
esac
# Root keeps its capabilities in the sandbox; a user has none to keep.
out=$($B --uid 0 -- sh -c 'umount -l / 2>/dev/null; cat /qw-secret' 2>&1); rc=$?
case "$WHO:$rc:$out" in
    root:1:*"initramfs"*CAP_SYS_ADMIN*) pass bwrap-sys-admin-refused ;;
    user:*"No such file"*) pass bwrap-uid0-without-caps ;;
    *) fail bwrap-sys-admin "rc=$rc: $(echo "$out" | tr '\n' ' ')" ;;
esac
out=$($B --uid 0 --cap-drop ALL -- sh -c 'umount -l / 2>/dev/null; cat /qw-secret' 2>&1)
case "$out" in *"No such file"*) pass bwrap-uid0-dropped ;; *) fail bwrap-uid0-dropped "$(echo "$out" | tr '\n' ' ')" ;; esac
