#!/bin/sh
# make kernel-test: boots Debian 12's Linux 6.1 and Debian 11's Linux 5.10
# cloud kernels under QEMU (TCG; KVM does not boot stock kernels on these
# machines), twice each:
#  - with an initramfs that holds busybox, the static qwrap and the checks:
#    the checks on the initramfs root and then on a tmpfs root, as root and
#    as an unprivileged uid on both mount APIs;
#  - with a Debian 12 root that mmdebstrap builds from Debian's archive
#    (dash, bash, busybox, make, util-linux, mount, procps) and the static
#    qwrap: on a tmpfs root, 400 pipelines in dash, in bash and in busybox
#    sh and make -j4 of 200 targets, bare as the control, then in qwrap's
#    default mode and with --landlock off as root and as uid 1001
#    (debian-init, debian.sh).
# Fails on any FAIL, or where a VM does not reach its QW: END; prints each
# stage's counts per kernel and how long each boot took.
#   sh tests/kernel/run.sh STATIC_QWRAP
# Work files live in $KM (default /var/tmp/qwrap-kernel-test); the kernel
# packages and the Debian root (keyed by its package list) are kept there
# between runs. Where the Debian root cannot be built (no mmdebstrap, no
# archive, not root) its stage says `QW: SKIP debian-userland: why` and the
# run fails, unless KERNEL_TEST_NO_DEBIAN=1 skips that stage on purpose.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
QWBIN=$(realpath "$1")
KM=${KM:-/var/tmp/qwrap-kernel-test}
mkdir -p "$KM/k"
# Debian's archive: Debian 11's kernel and the Debian 12 root come from it.
DEBIAN_MIRROR=http://deb.debian.org/debian

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
    base=$DEBIAN_MIRROR
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

# The Debian 12 root of the userland stage: a gzip'd cpio archive that
# mmdebstrap builds once per recipe ($KM/debroot-KEY.cpio.gz, KEY from the
# package list and the options): its path on stdout, or why not and status 1.
DEBIAN_PKGS=passwd,mount,dash,bash,busybox,coreutils,make,util-linux,procps
debian_root() {
    # Essential:yes plus the list; merged /usr without the usrmerge package
    # (and the perl it pulls in); no documentation; u, uid 1001, with a home.
    hooks=/usr/share/mmdebstrap/hooks/maybe-merged-usr
    recipe="bookworm essential $DEBIAN_PKGS merged-usr no-docs useradd-1001"
    key=$(printf '%s' "$recipe" | sha256sum | cut -c1-16)
    out=$KM/debroot-$key.cpio.gz
    if [ -s "$out" ]; then echo "$out"; return 0; fi
    [ "$(id -u)" = 0 ] || { echo "building the Debian root needs root"; return 1; }
    command -v mmdebstrap >/dev/null || { echo "no mmdebstrap (apt-get install mmdebstrap)"; return 1; }
    [ -d "$hooks" ] || { echo "mmdebstrap has no $hooks (mmdebstrap >= 1.3 needed)"; return 1; }
    d=$KM/debroot-$key.tmp
    rm -rf "$d"
    t0=$(date +%s)
    if ! mmdebstrap --variant=essential --include="$DEBIAN_PKGS" --hook-dir="$hooks" \
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
        --customize-hook='chroot "$1" useradd -m -u 1001 -s /bin/sh u' \
        --format=directory bookworm "$d" "$DEBIAN_MIRROR" </dev/null >"$KM/mmdebstrap.log" 2>&1; then
        rm -rf "$d"
        err=$(grep '^E:' "$KM/mmdebstrap.log" | head -n 1)
        echo "mmdebstrap failed: $(echo "${err:-$(tail -n 1 "$KM/mmdebstrap.log")}" | cut -c1-200) (log in $KM/mmdebstrap.log)"
        return 1
    fi
    if ! (cd "$d" && find . | $CPIO -o -H newc) > "$out.cpio"; then
        rm -rf "$d" "$out.cpio"; echo "packing the Debian root failed"; return 1
    fi
    rm -rf "$d"
    gzip -1 < "$out.cpio" > "$out.tmp" && mv "$out.tmp" "$out" ||
        { rm -f "$out.cpio" "$out.tmp"; echo "packing the Debian root failed"; return 1; }
    rm -f "$out.cpio"
    # Roots of an older recipe go.
    for o in "$KM"/debroot-*.cpio.gz; do [ "$o" = "$out" ] || rm -f "$o"; done
    echo "kernel-test: Debian root built by mmdebstrap in $(($(date +%s) - t0)) s" >&2
    echo "$out"
}
DEB=""
if [ "${KERNEL_TEST_NO_DEBIAN:-0}" = 1 ]; then
    why="KERNEL_TEST_NO_DEBIAN=1"
elif why=$(debian_root); then
    root=$why
    # Its /init, the checks and the static qwrap, in a second archive after
    # the cached one (the kernel unpacks them in turn).
    X=$KM/debian-extra
    rm -rf "$X"
    mkdir -p "$X/qw" "$X/usr/local/bin"
    cp "$QWBIN" "$X/usr/local/bin/qwrap"
    cp "$HERE/debian-init" "$X/init"
    cp "$HERE/debian.sh" "$X/qw/"
    chmod 0755 "$X/init" "$X/qw/debian.sh" "$X/usr/local/bin/qwrap"
    (cd "$X" && printf '%s\n' init qw qw/debian.sh usr/local/bin/qwrap | $CPIO -o -H newc | gzip -1) > "$KM/debian-extra.cpio.gz"
    cat "$root" "$KM/debian-extra.cpio.gz" > "$KM/debian.cpio.gz"
    DEB=$KM/debian.cpio.gz
fi

# Boots one kernel (IMAGE NAME INITRD MEMORY TIMEOUT); its QW: lines go to
# $KM/results-NAME.txt, and how long it took to $secs.
boot() {
    log=$KM/console-$2.log
    rc=0
    t0=$(date +%s)
    timeout "$5" qemu-system-x86_64 -accel tcg -m "$4" -smp 2 -nographic -no-reboot -nic none \
        -kernel "$1" -initrd "$3" \
        -append "console=ttyS0 panic=-1 quiet loglevel=1" >"$log" 2>&1 </dev/null || rc=$?
    secs=$(($(date +%s) - t0))
    # The console may put terminal resets before a line: take QW: lines
    # from wherever they start.
    grep -a -o 'QW: .*' "$log" | tr -d '\r' > "$KM/results-$2.txt"
    cat "$KM/results-$2.txt"
    echo "kernel-test: the $2 boot took $secs s" >&2
    if ! grep -q '^QW: END' "$KM/results-$2.txt"; then
        echo "kernel-test: the $2 VM did not finish (qemu rc=$rc); console in $log" >&2
        tail -n 30 "$log" >&2
        return 1
    fi
}

# Counts one boot's results (RESULTS LABEL) into the summary; a FAIL, or no
# PASS, fails the run.
tally() {
    fails=$(grep -c '^QW: FAIL' "$1" || true)
    passes=$(grep -c '^QW: PASS' "$1" || true)
    summary="$summary$2: $passes passed, $fails failed (boot $secs s)
"
    [ "$fails" -eq 0 ] && [ "$passes" -gt 0 ] || status=1
}

status=0
summary=""
for k in $KERNELS; do
    case $k in
        6.1) img=$(kernel) ;;
        5.10) img=$(kernel_510) ;;
        *) echo "kernel-test: unknown kernel $k (6.1 or 5.10)" >&2; exit 2 ;;
    esac
    boot "$img" "$k" "$KM/root.cpio.gz" 1024 "${VM_TIMEOUT:-600}" || status=1
    f=$KM/results-$k.txt
    label=$(grep '^QW: kernel' "$f" | head -n 1 | sed 's/^QW: //')
    tally "$f" "${label:-kernel $k}"
    f=$KM/results-$k-debian.txt
    if [ -n "$DEB" ]; then
        boot "$img" "$k-debian" "$DEB" 2048 "${VM_TIMEOUT:-1800}" || status=1
        label=$(grep '^QW: debian-userland' "$f" | head -n 1 | sed 's/^QW: //')
        tally "$f" "${label:-debian-userland on $k}"
    else
        echo "QW: SKIP debian-userland: $why" | tee "$f"
        summary="${summary}debian-userland on $k: skipped ($why)
"
        [ "${KERNEL_TEST_NO_DEBIAN:-0}" = 1 ] || status=1
    fi
done
printf 'kernel-test:\n%s' "$summary"
exit $status
