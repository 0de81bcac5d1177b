#!/bin/sh
# make kernel-test: boots Debian 12's Linux 6.1 cloud kernel under QEMU (TCG;
# KVM does not boot stock kernels on these machines) with an initramfs that
# holds busybox, the static qwrap and the checks, runs the checks as root
# and as an unprivileged uid on both mount APIs, and fails on any FAIL.
#   sh tests/kernel/run.sh STATIC_QWRAP
# Work files live in $KM (default /var/tmp/qwrap-kernel-test); the kernel
# package is kept there between runs.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
QWBIN=$(realpath "$1")
KM=${KM:-/var/tmp/qwrap-kernel-test}
mkdir -p "$KM/k"

# The newest linux-image-6.1.0-*-cloud-amd64-unsigned, fetched once.
kernel() {
    newest() {
        apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' 2>/dev/null |
            awk '{print $1}' | sort -V | tail -n 1
    }
    pkg=$(newest)
    if [ -z "$pkg" ]; then
        apt-get update -qq >/dev/null 2>&1 || true
        pkg=$(newest)
    fi
    [ -n "$pkg" ] || { echo "kernel-test: no linux-image-6.1.0-*-cloud-amd64-unsigned package" >&2; exit 1; }
    if [ ! -d "$KM/k/$pkg" ]; then
        (cd "$KM/k" && apt-get download "$pkg" >/dev/null 2>&1) ||
            { echo "kernel-test: apt-get download $pkg failed" >&2; exit 1; }
        dpkg-deb -x "$(ls "$KM/k/$pkg"_*.deb | sort -V | tail -n 1)" "$KM/k/$pkg.tmp"
        mv "$KM/k/$pkg.tmp" "$KM/k/$pkg"
    fi
    ls "$KM/k/$pkg"/boot/vmlinuz-* | head -n 1
}

VMLINUZ=$(kernel)
R=$KM/root
rm -rf "$R"
mkdir -p "$R" && cd "$R"
mkdir -p bin etc proc sys dev tmp var/tmp root home/u srv usr/local/bin qw
cp /bin/busybox bin/busybox
for a in $(bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "bin/$a"; done
cp "$QWBIN" usr/local/bin/qwrap
cp "$HERE/init" init
cp "$HERE/checks.sh" "$HERE/initramfs.sh" qw/
chmod 0755 init qw/checks.sh qw/initramfs.sh
printf 'root:x:0:0:root:/root:/bin/sh\nu:x:1001:1001:u:/home/u:/bin/sh\n' > etc/passwd
printf 'root:x:0:\nu:x:1001:\n' > etc/group
chown -R 1001:1001 home/u
chmod 0700 root
chmod 1777 tmp var/tmp
if command -v cpio >/dev/null; then CPIO="cpio --quiet"; else CPIO="busybox cpio"; fi
find . | $CPIO -o -H newc | gzip -1 > "$KM/root.cpio.gz"

LOG=$KM/console.log
rc=0
timeout "${VM_TIMEOUT:-600}" qemu-system-x86_64 -accel tcg -m 1024 -smp 1 -nographic -no-reboot -nic none \
    -kernel "$VMLINUZ" -initrd "$KM/root.cpio.gz" \
    -append "console=ttyS0 panic=-1 quiet loglevel=1" >"$LOG" 2>&1 </dev/null || rc=$?
# The console may put terminal resets before a line: take QW: lines from
# wherever they start.
grep -a -o 'QW: .*' "$LOG" | tr -d '\r' > "$KM/results.txt"
cat "$KM/results.txt"
if ! grep -q '^QW: END' "$KM/results.txt"; then
    echo "kernel-test: the VM did not finish (qemu rc=$rc); console in $LOG" >&2
    tail -n 30 "$LOG" >&2
    exit 1
fi
fails=$(grep -c '^QW: FAIL' "$KM/results.txt" || true)
passes=$(grep -c '^QW: PASS' "$KM/results.txt" || true)
echo "kernel-test: $(grep '^QW: kernel' "$KM/results.txt" | head -n 1)"
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passes" -gt 0 ]
