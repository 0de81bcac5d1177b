#!/bin/sh
# make kernel-test: boots Debian 12's Linux 6.1 and Debian 11's Linux 5.10
# cloud kernels under QEMU (TCG; KVM does not boot stock kernels on these
# machines) with an initramfs that holds busybox, the static qwrap and the
# checks, runs the checks on the initramfs root and then on a tmpfs root, as
# root and as an unprivileged uid on both mount APIs, and fails on any FAIL.
#   sh tests/kernel/run.sh STATIC_QWRAP
# Work files live in $KM (default /var/tmp/qwrap-kernel-test); the kernel
# packages are kept there between runs.
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

# The newest linux-image-5.10.0-*-cloud-amd64-unsigned of Debian 11, from
# the archive's package index (this host's apt knows only Debian 12).
kernel_510() {
    base=http://deb.debian.org/debian
    file=$(curl -fsS --max-time 120 "$base/dists/bullseye/main/binary-amd64/Packages.xz" | xz -d |
        awk '/^Package: linux-image-5\.10\.0-[0-9]+-cloud-amd64-unsigned$/ {p=1; next}
             p && /^Filename: / {print $2; p=0}' | sort -V | tail -n 1)
    [ -n "$file" ] || { echo "kernel-test: no Debian 11 5.10 cloud kernel in the index" >&2; exit 1; }
    name=$(basename "$file" .deb)
    if [ ! -d "$KM/k/$name" ]; then
        curl -fsS --max-time 600 -o "$KM/k/$name.deb" "$base/$file" ||
            { echo "kernel-test: downloading $file failed" >&2; exit 1; }
        dpkg-deb -x "$KM/k/$name.deb" "$KM/k/$name.tmp" && rm -f "$KM/k/$name.deb"
        mv "$KM/k/$name.tmp" "$KM/k/$name"
    fi
    ls "$KM/k/$name"/boot/vmlinuz-* | head -n 1
}

# KERNELS: which to boot (default both: Debian 12's 6.1 and Debian 11's
# 5.10, the oldest kernel qwrap supports).
KERNELS=${KERNELS:-"6.1 5.10"}
R=$KM/root
rm -rf "$R"
mkdir -p "$R" && cd "$R"
mkdir -p bin etc proc sys dev tmp var/tmp root home/u srv usr/local/bin qw
cp /bin/busybox bin/busybox
for a in $(bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "bin/$a"; done
cp "$QWBIN" usr/local/bin/qwrap
cp "$HERE/init" init
cp "$HERE/checks.sh" "$HERE/initramfs.sh" "$HERE/userns-off.sh" qw/
# The io_uring setuid attack, built static for the initramfs (skipped, and
# said, where no C compiler can).
cc -static -O2 -o qw/uring "$HERE/../helpers/uring_setuid.c" 2>/dev/null || echo "kernel-test: no static io_uring helper: its check says SKIP" >&2
chmod 0755 init qw/checks.sh qw/initramfs.sh qw/userns-off.sh
printf 'root:x:0:0:root:/root:/bin/sh\nu:x:1001:1001:u:/home/u:/bin/sh\n' > etc/passwd
printf 'root:x:0:\nu:x:1001:\n' > etc/group
chown -R 1001:1001 home/u
chmod 0700 root
chmod 1777 tmp var/tmp
if command -v cpio >/dev/null; then CPIO="cpio --quiet"; else CPIO="busybox cpio"; fi
find . | $CPIO -o -H newc | gzip -1 > "$KM/root.cpio.gz"

# Boots one kernel; its QW: lines go to $KM/results-NAME.txt.
boot() {
    log=$KM/console-$2.log
    rc=0
    timeout "${VM_TIMEOUT:-600}" qemu-system-x86_64 -accel tcg -m 1024 -smp 2 -nographic -no-reboot -nic none \
        -kernel "$1" -initrd "$KM/root.cpio.gz" \
        -append "console=ttyS0 panic=-1 quiet loglevel=1" >"$log" 2>&1 </dev/null || rc=$?
    # The console may put terminal resets before a line: take QW: lines
    # from wherever they start.
    grep -a -o 'QW: .*' "$log" | tr -d '\r' > "$KM/results-$2.txt"
    cat "$KM/results-$2.txt"
    if ! grep -q '^QW: END' "$KM/results-$2.txt"; then
        echo "kernel-test: the $2 VM did not finish (qemu rc=$rc); console in $log" >&2
        tail -n 30 "$log" >&2
        return 1
    fi
}

status=0
summary=""
for k in $KERNELS; do
    case $k in
        6.1) img=$(kernel) ;;
        5.10) img=$(kernel_510) ;;
        *) echo "kernel-test: unknown kernel $k (6.1 or 5.10)" >&2; exit 2 ;;
    esac
    boot "$img" "$k" || status=1
    f=$KM/results-$k.txt
    fails=$(grep -c '^QW: FAIL' "$f" || true)
    passes=$(grep -c '^QW: PASS' "$f" || true)
    summary="$summary$(grep '^QW: kernel' "$f" | head -n 1 | sed 's/^QW: //'): $passes passed, $fails failed
"
    [ "$fails" -eq 0 ] && [ "$passes" -gt 0 ] || status=1
done
printf 'kernel-test:\n%s' "$summary"
exit $status
