"""What `--explain` costs a real build: `cargo build` of a small crate
(offline, no dependencies) and `npm install` of a small local project (a
`file:` tarball dependency, offline), each in a sandbox with and without
`--explain`, interleaved as the other rows are.

Run as the caller with the caller's home, not as the benchmark user:
cargo and rustc are the caller's (rustup's under a home the benchmark user
cannot enter). Timings are reported, never asserted.

`python3 bench/builds.py [QWRAP]` runs these rows alone (default: the
static binary).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from common import INTERLEAVE, QUICK, STATIC, log

CRATE_MAIN = """use std::collections::HashMap;

fn main() {
    let mut squares = HashMap::new();
    for i in 0..10u64 {
        squares.insert(i, i * i);
    }
    println!("{:?}", squares.get(&3));
}
"""


def interleaved(cases, runs, warmup, cwd):
    """Median wall time in ms of each case, as the caller (see the module)."""
    out = subprocess.run(["python3", "-c", INTERLEAVE, json.dumps(cases), str(runs), str(warmup)],
                         cwd=cwd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def make_crate(work):
    crate = os.path.join(work, "crate")
    os.makedirs(os.path.join(crate, "src"))
    with open(os.path.join(crate, "Cargo.toml"), "w") as fh:
        fh.write('[package]\nname = "small"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n')
    with open(os.path.join(crate, "src/main.rs"), "w") as fh:
        fh.write(CRATE_MAIN)
    return crate


def make_npm_project(work):
    """A project whose one dependency is a local tarball of 30 modules."""
    dep = os.path.join(work, "dep")
    os.makedirs(dep)
    with open(os.path.join(dep, "package.json"), "w") as fh:
        fh.write('{"name": "localdep", "version": "1.0.0", "main": "index.js"}\n')
    for i in range(30):
        with open(os.path.join(dep, f"m{i}.js"), "w") as fh:
            fh.write(f"module.exports = {i};\n")
    with open(os.path.join(dep, "index.js"), "w") as fh:
        fh.write("module.exports = 42;\n")
    subprocess.run(["npm", "pack", "--silent"], cwd=dep, check=True, capture_output=True)
    app = os.path.join(work, "app")
    os.makedirs(app)
    with open(os.path.join(app, "package.json"), "w") as fh:
        fh.write('{"name": "app", "version": "1.0.0", '
                 '"dependencies": {"localdep": "file:../dep/localdep-1.0.0.tgz"}}\n')
    return app


def rows(qwrap):
    """The rows: (case, with --explain, without, target, met)."""
    out = []
    runs, warmup = (3, 1) if QUICK else (15, 2)
    work = tempfile.mkdtemp(prefix="qwrap-bench-builds-", dir="/var/tmp")
    try:
        log("20,000 opens from one process, with and without --explain")
        opens = ("import os\nfor _ in range(20000):\n"
                 "    os.close(os.open('/etc/hostname', os.O_RDONLY))\n")
        t = interleaved({"plain": [qwrap, "run", "--", "python3", "-c", opens],
                         "explain": [qwrap, "run", "--explain", "--", "python3", "-c", opens]},
                        5 if QUICK else 15, 1, work)
        per_call = (t["explain"] - t["plain"]) / 20000 * 1000
        out.append((f"20,000 `open`s from one process, `--explain` vs without ({per_call:.1f} µs more per trapped call)",
                    t["explain"], t["plain"], "", None))
        if shutil.which("cargo"):
            log("cargo build, with and without --explain")
            crate = make_crate(work)
            build = "rm -rf target && cargo build --offline -q"
            t = interleaved({"plain": [qwrap, "run", "--", "sh", "-c", build],
                             "explain": [qwrap, "run", "--explain", "--", "sh", "-c", build]},
                            runs, warmup, crate)
            out.append(("`cargo build` of a small crate (offline, no dependencies), `--explain` vs without, as the caller",
                        t["explain"], t["plain"], "≤ 1.05× without", t["explain"] <= 1.05 * t["plain"]))
        else:
            log("no cargo: the cargo build row is skipped")
        if shutil.which("npm"):
            log("npm install, with and without --explain")
            app = make_npm_project(work)
            install = ("rm -rf node_modules package-lock.json && "
                       "npm install --offline --no-audit --no-fund --silent")
            t = interleaved({"plain": [qwrap, "run", "--", "sh", "-c", install],
                             "explain": [qwrap, "run", "--explain", "--", "sh", "-c", install]},
                            runs, warmup, app)
            out.append(("`npm install` of a small project (a local tarball dependency, offline), `--explain` vs without, as the caller",
                        t["explain"], t["plain"], "≤ 1.05× without", t["explain"] <= 1.05 * t["plain"]))
        else:
            log("no npm: the npm install row is skipped")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


if __name__ == "__main__":
    binary = sys.argv[1] if len(sys.argv) > 1 else STATIC
    print("| case | with --explain | without | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for name, q, b, target, met in rows(binary):
        verdict = "" if met is None else ("yes" if met else "NO")
        print(f"| {name} | {q:.0f} ms | {b:.0f} ms | {q / b:.3f}× | {target} | {verdict} |")
