#!/usr/bin/env python3
"""qwrap's benchmark: start-up, growth with the host's mount count, verify and
inspect, binary size and peak RSS, each beside bubblewrap, measured in the
same run and printed as one table of medians and ratios; then what qwrap's
start-up consists of, the Plan's steps with their share.

Runs every measurement as an unprivileged user (nobody when started as root).
Installs Debian's bubblewrap and GNU time when they are missing and it can.
Timings are reported, never asserted: the targets column says whether this
machine met each goal.
"""

import json
import os
import re
import platform
import resource
import shutil
import subprocess
import sys
import tempfile

from common import (IS_ROOT, LAYERS, QUICK, ROOT, STATIC, as_user, breakdown, chown_user, ensure_tools, log,
                    side_by_side)
from like import like_with_like, print_like
import builds

MOUNT_COUNTS = [0, 100, 1000, 5000]


def peak_rss_kib(argv, cwd):
    """Peak resident set of a run, in KiB: GNU time's %M (the largest
    ru_maxrss of the command and the children it waited for), the median of
    11 runs."""
    seen = []
    for _ in range(11):
        r = subprocess.run(as_user(["/usr/bin/time", "-f", "%M", *argv]), cwd=cwd, check=True,
                           capture_output=True, text=True)
        seen.append(int(r.stderr.strip().splitlines()[-1]))
    return sorted(seen)[len(seen) // 2]


MKMOUNTS = r"""
import ctypes, os, sys
n, base = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
for i in range(n):
    d = os.path.join(base, f"m{i}")
    os.makedirs(d, exist_ok=True)
    if libc.mount(b"qwrap-bench", d.encode(), b"tmpfs", 0, b"size=4k") != 0:
        sys.exit(f"mount {d}: errno {ctypes.get_errno()}")
"""


def in_mount_namespace(n, base):
    """Wraps a command so that it runs in a private mount namespace holding n
    extra tmpfs mounts (a user namespace too when not root)."""
    def wrap(cmd):
        ns = ["unshare", "-m", "--propagation", "private"] if IS_ROOT else ["unshare", "-U", "-r", "-m"]
        script = 'python3 -c "$0" "$1" "$2" && shift 2 && exec "$@"'
        return [*ns, "sh", "-c", script, MKMOUNTS, str(n), base, *cmd]
    return wrap


def main():
    ensure_tools()
    log("building the static binary")
    subprocess.run(["make", "-s", "static"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    log("building bench/layers.c, qwrap's default layers and nothing else")
    subprocess.run(["cc", "-O2", "-static", "-o", LAYERS, os.path.join(ROOT, "bench/layers.c")], check=True)
    work = tempfile.mkdtemp(prefix="qwrap-bench-", dir="/var/tmp")
    os.chmod(work, 0o755)
    try:
        run(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(work):
    qwrap = os.path.join(work, "qwrap")
    shutil.copy(STATIC, qwrap)
    os.chmod(qwrap, 0o755)
    ws = os.path.join(work, "ws")
    os.mkdir(ws)
    chown_user(ws)
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    os.chmod(mnt, 0o755)
    bwrap_argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--bind", ws, ws, "--die-with-parent", "/bin/true"]
    bwrap = " ".join(bwrap_argv)
    rows = []
    runs = 40 if QUICK else 300
    layers = os.path.join(work, "layers")
    shutil.copy(LAYERS, layers)
    os.chmod(layers, 0o755)
    n = 100 if QUICK else 1000
    like = like_with_like(work, qwrap, layers, n)

    log("start-up")
    # For scale: util-linux's unshare making the same user and mount
    # namespaces and running the command, with no sandbox at all (it is
    # dynamically linked, so not a strict floor for the static qwrap).
    t = side_by_side({"qwrap": f"{qwrap} run -- /bin/true", "bwrap": bwrap, "true": "/bin/true",
                   "unshare": "unshare -Urm /bin/true"},
                  100 if QUICK else 1000, 30, ws)
    startup = (t["qwrap"], t["true"])
    rows.append(("start-up, default policy (`run -- /bin/true`)", t["qwrap"], t["bwrap"],
                 f"≤ 0.6× bwrap; /bin/true alone {t['true']:.2f} ms", t["qwrap"] <= 0.6 * t["bwrap"]))
    rows.append(("for scale: `unshare -Urm /bin/true` (namespaces only, no sandbox; dynamically linked)", t["unshare"], t["bwrap"],
                 "", None))

    log("start-up with the default hidden set")
    home = os.path.join(work, "home")
    hidden = make_secret_home(home)
    t = side_by_side({"qwrap": f"{qwrap} run -- /bin/true", "bwrap": bwrap}, 100 if QUICK else 1000, 30, ws, home=home)
    rows.append((f"start-up, a home holding the {hidden} default hidden paths", t["qwrap"], t["bwrap"],
                 "≤ 0.6× bwrap", t["qwrap"] <= 0.6 * t["bwrap"]))
    log("start-up with a home of 200 entries")
    big_home = os.path.join(work, "big-home")
    make_big_home(big_home, 200)
    t = side_by_side({"qwrap": f"{qwrap} run -- /bin/true", "whole": f"{qwrap} run --home readonly -- /bin/true",
                      "bwrap": bwrap}, 100 if QUICK else 1000, 30, ws, home=big_home)
    rows.append(("start-up, a home of 200 entries, listed (the default)", t["qwrap"], t["bwrap"],
                 "≤ 0.75× bwrap", t["qwrap"] <= 0.75 * t["bwrap"]))
    rows.append(("start-up, the same home whole (`--home readonly`, its hidden set)", t["whole"], t["bwrap"], "", None))
    t = side_by_side({"qwrap": f"{qwrap} run --view minimal -- /bin/true", "bwrap": bwrap}, 100 if QUICK else 1000, 30, ws)
    rows.append(("start-up, `--view minimal`", t["qwrap"], t["bwrap"], "", None))

    log("start-up with overlaid caches")
    # A home whose ~/.cache holds a file (one overlay), then a Rust workspace
    # (the rust profile adds ~/.cargo/registry, holding a file, and an
    # empty ~/.cargo/git: two overlays and a bare layer); then a fresh home
    # (an empty ~/.cache: its layer bound bare).
    cache_home = os.path.join(work, "cache-home")
    for d in (".cache", ".cargo", ".cargo/registry", ".cargo/git"):
        os.makedirs(os.path.join(cache_home, d), exist_ok=True)
    for f in (".cache/held", ".cargo/registry/held"):
        with open(os.path.join(cache_home, f), "w") as fh:
            fh.write("x\n")
    for dirpath, dirnames, filenames in os.walk(cache_home):
        chown_user(dirpath)
        for n in filenames:
            chown_user(os.path.join(dirpath, n))
    fresh_home = os.path.join(work, "fresh-home")
    os.makedirs(fresh_home)
    chown_user(fresh_home)
    rust_ws = os.path.join(work, "rust-ws")
    os.mkdir(rust_ws)
    with open(os.path.join(rust_ws, "Cargo.toml"), "w") as fh:
        fh.write("[package]\nname = \"b\"\n")
    chown_user(rust_ws)
    t = side_by_side({"qwrap": f"{qwrap} run -- /bin/true", "private": f"{qwrap} run --cache private -- /bin/true",
                   "bwrap": bwrap}, 100 if QUICK else 1000, 30, ws, home=cache_home)
    rows.append(("start-up, `~/.cache` overlaid (it holds a file)", t["qwrap"], t["bwrap"],
                 "≤ 0.6× bwrap", t["qwrap"] <= 0.6 * t["bwrap"]))
    rows.append(("start-up, `~/.cache` as a private tmpfs (`--cache private`)", t["private"], t["bwrap"], "", None))
    t = side_by_side({"qwrap": f"{qwrap} run -- /bin/true", "bwrap": bwrap}, 100 if QUICK else 1000, 30, rust_ws,
                  home=cache_home)
    rows.append(("start-up, a Rust workspace: two caches overlaid, one bare", t["qwrap"], t["bwrap"], "", None))
    t = side_by_side({"qwrap": f"{qwrap} run -- /bin/true", "bwrap": bwrap}, 100 if QUICK else 1000, 30, ws,
                  home=fresh_home)
    rows.append(("start-up, a fresh home: `~/.cache` made empty, its layer bound bare", t["qwrap"], t["bwrap"], "", None))

    growth = {}
    for n in MOUNT_COUNTS:
        log(f"{n} host mounts")
        r = 10 if n >= 5000 else (30 if n >= 1000 else (20 if QUICK else 100))
        w = 2 if n >= 1000 else 10
        wrap = in_mount_namespace(n, mnt)
        t = side_by_side({"qwrap": f"{qwrap} run -- /bin/true", "bwrap": bwrap}, r, w, ws, wrap=wrap)
        legacy = side_by_side({"legacy": f"{qwrap} run -- /bin/true"}, r, w, ws,
                           env={"QWRAP_MOUNT_API": "legacy"}, wrap=wrap)["legacy"]
        growth[n] = (t["qwrap"], legacy, t["bwrap"])
        target = ""
        met = None
        if n == 5000:
            target = "≤ 0.03× bwrap"
            met = t["qwrap"] <= 0.03 * t["bwrap"]
        rows.append((f"{n} host mounts, new mount API", t["qwrap"], t["bwrap"], target, met))
        rows.append((f"{n} host mounts, legacy path", legacy, t["bwrap"],
                     "≤ 0.5× bwrap" if n == 5000 else "", (legacy <= 0.5 * t["bwrap"]) if n == 5000 else None))

    rows.extend(review_rows(work, qwrap, bwrap))
    rows.extend(git_rows(work, qwrap, bwrap))

    log("--network proxied")
    t = side_by_side({"qwrap": f"{qwrap} run --network proxied --allow-domain example.com -- /bin/true",
                   "closed": f"{qwrap} run --network closed -- /bin/true", "bwrap": bwrap},
                  100 if QUICK else 1000, 30, ws)
    rows.append(("start-up, `--network proxied` (the proxy's socket handed to the warden)", t["qwrap"], t["bwrap"], "", None))
    rows.append(("start-up, `--network closed`", t["closed"], t["bwrap"], "", None))

    log("--pid private")
    # Like with like: bubblewrap with a PID namespace and a /proc of its own.
    bwrap_pid = " ".join(bwrap_argv[:6] + ["--unshare-pid", "--proc", "/proc"] + bwrap_argv[6:])
    t = side_by_side({"qwrap": f"{qwrap} run --pid private -- /bin/true", "bwrap": bwrap_pid},
                  100 if QUICK else 1000, 30, ws)
    rows.append(("start-up, `--pid private` (vs bwrap with `--unshare-pid --proc /proc`)", t["qwrap"], t["bwrap"], "", None))

    log("limits")
    # A cgroup per sandbox: made after the warden, joined by the process
    # that becomes the command before it forks (a migration, which can wait
    # for an RCU grace period), emptied and removed by the warden after the
    # command's exit (off the caller's wait here: stderr is /dev/null). As
    # the benchmark user where it may have a group, else as root (cgroup v1
    # on a hybrid host), else a SKIP row.
    limited = f"{qwrap} run --memory 1G --max-processes 1000 -- /bin/true"
    who = limits_identity(limited, ws)
    if who:
        t = side_by_side({"limits": limited, "qwrap": f"{qwrap} run -- /bin/true",
                          "time": f"{qwrap} run --time-limit 1h -- /bin/true"},
                         100 if QUICK else 1000, 30, ws, user=(who == "the benchmark user"))
        rows.append((f"start-up, `--memory 1G --max-processes 1000` (a cgroup per sandbox, as {who}) vs the default",
                     t["limits"], t["qwrap"], "", None))
        rows.append(("start-up, `--time-limit 1h` (the warden's clock, no cgroup) vs the default", t["time"], t["qwrap"],
                     "", None))
    else:
        rows.append(("start-up with limits: SKIP, no identity here may have a cgroup of its own", None, None, "", None))

    log("forks")
    # 2,000 /bin/true from dash: forks are not trapped on either path, so
    # --landlock off (the path of every kernel before 6.12) costs no more.
    loop = "i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done"
    t = side_by_side({"qwrap": [qwrap, "run", "--", "dash", "-c", loop],
                      "off": [qwrap, "run", "--landlock", "off", "--", "dash", "-c", loop]},
                     5 if QUICK else 20, 2, ws)
    rows.append(("2,000 `/bin/true` from dash, `--landlock off` (the path before Linux 6.12) vs the default",
                 t["off"], t["qwrap"], "≤ 1.10× the default", t["off"] <= 1.10 * t["qwrap"]))
    # --explain: a round trip to the warden for each trapped call.
    rows.extend(builds.rows(qwrap))
    direct, proxied = egress_throughput(qwrap, ws, 64 if QUICK else 512)
    rows.append(("throughput over loopback, direct", f"{direct:.0f} MiB/s", None, "", None))
    rows.append(("throughput through the proxy's CONNECT", f"{proxied:.0f} MiB/s", None, "", None))

    log("verify and inspect")
    t = side_by_side({"verify": f"{qwrap} verify", "inspect": f"{qwrap} inspect"}, 20 if QUICK else 50, 5, ws)
    rows.append(("`qwrap verify` (no canary: not a checkout)", t["verify"], None, "< 250 ms", t["verify"] < 250))
    rows.append(("`qwrap inspect`", t["inspect"], None, "", None))

    log("size and peak RSS")
    size_q = os.path.getsize(STATIC)
    size_b = os.path.getsize(shutil.which("bwrap"))
    rss_q = peak_rss_kib([qwrap, "run", "--", "/bin/true"], ws)
    rss_b = peak_rss_kib(bwrap_argv, ws)

    log("start-up, step by step")
    steps = breakdown(qwrap, ws, 50 if QUICK else 300)

    print_like(like)
    print_table(rows, growth, size_q, size_b, rss_q, rss_b)
    print_breakdown(steps, *startup)
    print()
    print("The realistic home (the first table's second group), step by step:")
    print_breakdown(like["steps"], like["wall"], startup[1])


def review_rows(work, qwrap, bwrap):
    """`--review` beside the live mode: a git checkout (the live mode's git
    guard against the review mode's overlay of the workspace, its git dir
    included), then a workspace of 100,000 files. A run of /bin/true
    changes nothing, so its layer is made and removed each time."""
    log("--review")
    home = os.path.join(work, "review-home")
    os.makedirs(home)
    chown_user(home)
    rows = []
    for name, files in (("a git checkout", 10), ("a git checkout of 100,000 files", 100_000)):
        ws = os.path.join(work, f"review-ws-{files}")
        make_checkout(ws, files)
        t = side_by_side({"live": f"{qwrap} run -- /bin/true", "review": f"{qwrap} run --review -- /bin/true",
                          "bwrap": bwrap}, 100 if QUICK else 1000, 30, ws, home=home)
        rows.append((f"start-up, {name}, live (the git guard)", t["live"], t["bwrap"], "", None))
        rows.append((f"start-up, {name}, `--review` (an overlay of it)", t["review"], t["bwrap"],
                     f"≤ the live mode + 1 ms ({t['live']:.2f} ms)", t["review"] <= t["live"] + 1.0))
    return rows


def git_rows(work, qwrap, bwrap):
    """The git guard's start-up against `--allow-git-config` (no guard): a
    checkout of 40 commits, 30 branches and 30 tags (their refs and
    reflogs copied in), a superproject with five submodules, a workspace
    holding 20 repositories (each found by the walk and guarded)."""
    log("git guard")
    base = os.path.join(work, "git-guard")
    os.makedirs(base)
    g = "git -c user.name=b -c user.email=b@b -c protocol.file.allow=always"
    script = f"""set -e; cd {base}
        {g} init -q -b main co && cd co && for i in $(seq 1 40); do echo $i > f$i; {g} add f$i; {g} commit -qm c$i; done
        for i in $(seq 1 30); do {g} branch b$i; {g} tag t$i; done; cd ..
        for i in 1 2 3 4 5; do {g} init -q -b main s$i && (cd s$i && {g} commit -q --allow-empty -m s); done
        {g} init -q -b main sup && cd sup && {g} commit -q --allow-empty -m a
        for i in 1 2 3 4 5; do {g} submodule -q add ../s$i m$i; done; {g} commit -qm subs; cd ..
        mkdir many && cd many && for i in $(seq 1 20); do {g} init -q -b main r$i && (cd r$i && {g} commit -q --allow-empty -m r); done"""
    subprocess.run(["sh", "-c", script], check=True, stdout=subprocess.DEVNULL)
    for dirpath, dirnames, filenames in os.walk(base):
        chown_user(dirpath)
        for n in filenames:
            chown_user(os.path.join(dirpath, n))
    rows = []
    for name, ws in (("a checkout, 30 branches and 30 tags", "co"), ("a superproject with five submodules", "sup"),
                     ("a workspace holding 20 repositories", "many")):
        t = side_by_side({"guarded": f"{qwrap} run -- /bin/true",
                          "unguarded": f"{qwrap} run --allow-git-config -- /bin/true", "bwrap": bwrap},
                         100 if QUICK else 1000, 30, os.path.join(base, ws))
        rows.append((f"start-up, {name}, the git guard (`--allow-git-config`: {t['unguarded']:.2f} ms)",
                     t["guarded"], t["bwrap"], "", None))
    return rows


def make_checkout(ws, files):
    """A git checkout of `files` committed files (1,000 a directory), owned
    by the benchmark user."""
    os.makedirs(ws)
    for i in range(files):
        d = os.path.join(ws, f"d{i // 1000}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i}"), "w") as fh:
            fh.write(f"{i}\n")
    git = ["git", "-C", ws, "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "b"], check=True)
    for dirpath, dirnames, filenames in os.walk(ws):
        chown_user(dirpath)
        for n in filenames:
            chown_user(os.path.join(dirpath, n))


def limits_identity(cmd, ws):
    """Who can run a sandbox with a cgroup of its own here: the benchmark
    user, else root (when the benchmark runs as root), else None."""
    if subprocess.run(as_user(cmd.split()), cwd=ws, capture_output=True).returncode == 0:
        return "the benchmark user"
    if IS_ROOT and subprocess.run(cmd.split(), cwd=ws, capture_output=True).returncode == 0:
        return "root"
    return None


SECRET_FILES = [".ssh/id_ed25519", ".ssh/id_rsa", ".gnupg/secring.gpg", ".aws/credentials", ".kube/config",
                ".docker/config.json", ".netrc", ".git-credentials", ".config/gh/hosts.yml", ".npmrc", ".pypirc",
                ".cargo/credentials.toml", ".cargo/credentials"]
SECRET_DIRS = [".gnupg/private-keys-v1.d", ".aws/sso/cache", ".config/gcloud", ".azure", ".password-store",
               ".local/share/keyrings", ".mozilla", ".config/google-chrome", ".config/chromium"]


def egress_throughput(qwrap, ws, mib):
    """MiB/s a client in a sandbox reads from a loopback server on the host:
    directly (--network open) and through the proxy (--network proxied)."""
    import socket
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    chunk = b"\0" * (1 << 20)

    def serve():
        while True:
            c, _ = srv.accept()
            try:
                for _ in range(mib):
                    c.sendall(chunk)
            except OSError:
                pass
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    client = (
        "import socket, sys, time\n"
        "via = sys.argv[1] == 'proxy'\n"
        "t = time.monotonic()\n"
        f"s = socket.create_connection(('127.0.0.1', 3128 if via else {port}))\n"
        f"if via:\n    s.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n')\n"
        "    head = b''\n"
        "    while not head.endswith(b'\\r\\n\\r\\n'): head += s.recv(1)\n"
        "n = 0\n"
        "while True:\n"
        "    d = s.recv(1 << 20)\n"
        "    if not d: break\n"
        "    n += len(d)\n"
        "print(n / (1 << 20) / (time.monotonic() - t))\n"
    )
    script = os.path.join(ws, "egress_client.py")
    with open(script, "w") as fh:
        fh.write(client)
    chown_user(script)
    rates = []
    for args, via in (([], "direct"), (["--network", "proxied", "--allow-domain", f"127.0.0.1:{port}"], "proxy")):
        out = subprocess.run(as_user([qwrap, "run", *args, "--", "python3", script, via]), cwd=ws,
                             capture_output=True, text=True, check=True).stdout
        rates.append(float(out.strip()))
    os.remove(script)
    return rates


def make_big_home(home, n):
    """A developer's home of `n` entries: shell and tool settings the listed
    view shows, toolchains, and the rest (projects, dot-directories of other
    tools, credential files) that it leaves out."""
    shown = [".bashrc", ".profile", ".gitconfig", ".inputrc", ".vimrc", ".tmux.conf"]
    dirs = [".ssh", ".cargo/bin", ".rustup/toolchains", ".local/bin", ".nvm/versions", "go/bin", ".config/git"]
    for d in dirs:
        os.makedirs(os.path.join(home, d), exist_ok=True)
    for f in shown + [".ssh/known_hosts", ".ssh/config", ".ssh/id_ed25519", ".config/git/config"]:
        with open(os.path.join(home, f), "w") as fh:
            fh.write("x\n")
    made = len(os.listdir(home))
    for i in range(n - made):
        p = os.path.join(home, f".tool{i}" if i % 2 else f"project{i}")
        os.makedirs(p, exist_ok=True)
        with open(os.path.join(p, "state"), "w") as fh:
            fh.write("x\n")
    for dirpath, dirnames, filenames in os.walk(home):
        chown_user(dirpath)
        for f in filenames:
            chown_user(os.path.join(dirpath, f))


def make_secret_home(home):
    """A home directory holding every default hidden path; their count."""
    for d in SECRET_DIRS:
        os.makedirs(os.path.join(home, d), exist_ok=True)
    for f in SECRET_FILES:
        os.makedirs(os.path.dirname(os.path.join(home, f)), exist_ok=True)
        with open(os.path.join(home, f), "w") as fh:
            fh.write("secret\n")
    for dirpath, dirnames, filenames in os.walk(home):
        for n in dirnames + filenames:
            chown_user(os.path.join(dirpath, n))
    chown_user(home)
    return len(SECRET_FILES) + len(SECRET_DIRS)


def print_breakdown(steps, wall_ms, true_ms):
    """The start-up row split into its parts: share of qwrap's median wall."""
    wall = wall_ms * 1000
    parts = dict(steps)
    rest = wall - parts.get("prepare", 0) - parts.get("setup steps", 0) - true_ms * 1000
    print()
    print(f"What `qwrap run -- /bin/true` ({wall_ms:.2f} ms) consists of; medians of the executor's own clock:")
    print()
    print("| part | µs | share |")
    print("|---|---|---|")
    print(f"| qwrap's process start (exec, static glibc start-up), the command's exec from it, namespace teardown at exit | {rest:.0f} | {rest / wall:.1%} |")
    print(f"| prepare: command line, settings, policy, host probe, plan | {parts.get('prepare', 0):.0f} | {parts.get('prepare', 0) / wall:.1%} |")
    print(f"| setup: the Plan's steps below, all together | {parts.get('setup steps', 0):.0f} | {parts.get('setup steps', 0) / wall:.1%} |")
    for name, us in steps:
        if name not in ("prepare", "setup steps"):
            print(f"| — {name} | {us:.1f} | {us / wall:.1%} |")
    print(f"| the command itself (`/bin/true` alone: exec, ld.so, libc) | {true_ms * 1000:.0f} | {true_ms * 1000 / wall:.1%} |")


def fmt_ms(v):
    if isinstance(v, str):
        return v
    return "—" if v is None else f"{v:.2f} ms"


def print_table(rows, growth, size_q, size_b, rss_q, rss_b):
    bw = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"qwrap benchmark — {platform.node()}, Linux {platform.release()}, {os.cpu_count()} CPUs, "
          f"{bw}, as {'nobody' if IS_ROOT else 'uid ' + str(os.getuid())}; medians")
    print()
    print("| case | qwrap | bwrap | qwrap/bwrap | target | met |")
    print("|---|---|---|---|---|---|")
    for name, q, b, target, met in rows:
        ratio = "—" if b is None else f"{q / b:.3f}×"
        print(f"| {name} | {fmt_ms(q)} | {fmt_ms(b)} | {ratio} | {target} | {'' if met is None else ('yes' if met else 'NO')} |")
    q1, l1, b1 = growth[1000]
    q5, l5, b5 = growth[5000]
    print(f"| growth 1,000 → 5,000 mounts (×5 mounts) | {q5 / q1:.2f}× | {b5 / b1:.2f}× | | close to linear (≤ 5×) | {'yes' if q5 / q1 <= 5.5 else 'NO'} |")
    print(f"| growth 1,000 → 5,000 mounts, legacy path | {l5 / l1:.2f}× | | | close to linear (≤ 5×) | {'yes' if l5 / l1 <= 5.5 else 'NO'} |")
    print(f"| static stripped binary | {size_q / 1048576:.2f} MiB | {size_b / 1048576:.2f} MiB (dynamic) | | ≤ 3 MiB | {'yes' if size_q <= 3 << 20 else 'NO'} |")
    print(f"| peak RSS of a run | {rss_q / 1024:.2f} MiB | {rss_b / 1024:.2f} MiB | {rss_q / rss_b:.3f}× | ≤ bwrap | {'yes' if rss_q <= rss_b else 'NO'} |")


if __name__ == "__main__":
    main()
