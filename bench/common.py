"""What bench.py and like.py share: where things are, who measures, how."""

import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATIC = os.path.join(ROOT, "target/x86_64-unknown-linux-gnu/release/qwrap")
LAYERS = os.path.join(ROOT, "target/bench-layers")
# A bubblewrap with --overlay (0.9 or later) for the same-policy row: this
# variable, else `bwrap` when it is one, else the row is skipped.
NEW_BWRAP = os.environ.get("QWRAP_BENCH_BWRAP", "")
IS_ROOT = os.geteuid() == 0
USER = (65534, 65534)
QUICK = os.environ.get("QWRAP_BENCH_QUICK") == "1"


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def ensure_tools():
    missing = [p for p, exe in (("bubblewrap", "bwrap"), ("time", "/usr/bin/time"))
               if not shutil.which(exe)]
    if not missing:
        return
    if not IS_ROOT:
        sys.exit(f"bench: missing {' '.join(missing)}; install them (apt-get install {' '.join(missing)})")
    log(f"installing {' '.join(missing)}")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def as_user(cmd, home="/nonexistent"):
    """The command as the unprivileged benchmark user."""
    if not IS_ROOT:
        return ["env", f"HOME={home}", *cmd]
    return ["setpriv", f"--reuid={USER[0]}", f"--regid={USER[1]}", "--clear-groups",
            "env", f"HOME={home}", *cmd]


def chown_user(path):
    if IS_ROOT:
        os.chown(path, *USER)


def side_by_side(cases, runs, warmup, cwd, env=None, wrap=None, home="/nonexistent", user=True):
    """Median wall time in ms of each case (name -> argv list, or a string
    split on spaces). The cases' runs are interleaved, in a shuffled order
    each round, so that a machine whose speed drifts during the measurement
    (a VM's neighbours) weighs on every case alike; the timing loop runs as
    the benchmark user (inside `wrap`, when given), or with `user=False` as
    the caller."""
    argvs = {n: (c.split() if isinstance(c, str) else c) for n, c in cases.items()}
    loop = ["python3", "-c", INTERLEAVE, json.dumps(argvs), str(runs), str(warmup)]
    cmd = as_user(loop, home) if user else ["env", f"HOME={home}", *loop]
    if wrap:
        cmd = wrap(cmd)
    out = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}).stdout
    return json.loads(out)


TIME_LINE = re.compile(r"qwrap: time: (?:step +(\d+)|(prepare) \(.*?\)|(setup steps))\s+([\d.]+) µs\s*(.*)")


def breakdown(qwrap, ws, runs, home="/nonexistent"):
    """Median µs of each part of `run -- /bin/true`, from QWRAP_TRACE=time
    (the executor's own clock around each Plan step), in plan order."""
    seen = {}
    for _ in range(runs):
        r = subprocess.run(as_user([qwrap, "run", "--", "/bin/true"], home), cwd=ws, check=True,
                           capture_output=True, text=True, env={**os.environ, "QWRAP_TRACE": "time"})
        for line in r.stderr.splitlines():
            m = TIME_LINE.match(line)
            if m:
                step, prepare, setup, us, purpose = m.groups()
                name = f"{step:>2} {purpose}" if step else (prepare or setup)
                seen.setdefault(name, []).append(float(us))
    return [(name, sorted(v)[len(v) // 2]) for name, v in seen.items()]


INTERLEAVE = r"""
import json, os, random, sys, time
cases, runs, warmup = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
names = list(cases)
seen = {n: [] for n in names}
null = os.open("/dev/null", os.O_RDWR)
for i in range(warmup + runs):
    random.shuffle(names)
    for n in names:
        argv = cases[n]
        t = time.perf_counter_ns()
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)])
        _, status = os.waitpid(pid, 0)
        dt = time.perf_counter_ns() - t
        if status != 0:
            sys.exit(f"{n}: {argv} exited with {status}")
        if i >= warmup:
            seen[n].append(dt / 1e6)
print(json.dumps({n: sorted(v)[len(v) // 2] for n, v in seen.items()}))
"""

