"""Start-up compared like with like: qwrap beside bench/layers.c doing exactly
qwrap's layers for the same home (the physical limit of that work), and beside
bubblewrap — its narrow line, and, where a bubblewrap with --overlay (0.9 or
later) is at hand, bubblewrap running the same policy."""

import json
import os
import shutil
import subprocess

from common import NEW_BWRAP, QUICK, as_user, breakdown, chown_user, log, side_by_side

# Six credential files a developer's home holds.
CREDENTIALS = [".ssh/id_ed25519", ".ssh/id_rsa", ".aws/credentials", ".netrc", ".git-credentials",
               ".config/gh/hosts.yml"]


def owned_tree(root, files):
    """Makes `files` (relative path -> content) under root, all the
    benchmark user's."""
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
    for dirpath, dirnames, filenames in os.walk(root):
        chown_user(dirpath)
        for n in filenames:
            chown_user(os.path.join(dirpath, n))


def inspect(qwrap, ws, home):
    out = subprocess.run(as_user([qwrap, "inspect", "--json"], home), cwd=ws, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def layers_argv(layers, report):
    """bench/layers.c's arguments for the sandbox qwrap reports: the
    workspace first, the caches as qwrap mounts them, the hidden paths, the
    home's listed view."""
    argv = [layers, "-w", report["target_dir"]]
    caches = {c["path"]: c["how"] for c in report["layers"]["caches"]}
    home = None
    for r in report["writable_roots"]:
        path, how = r["path"], caches.get(r["path"])
        mode = how["mode"] if how else None
        if path == report["target_dir"]:
            continue
        if mode == "home_overlay":
            if home is None:
                home = how
                argv += ["-O", f"{how['home']}:{how['upper']}:{how['work']}"]
            argv += ["-c", path]
        elif mode == "overlay":
            argv += ["-o", f"{path}:{how['upper']}:{how['work']}"]
        elif mode == "bare":
            argv += ["-b", f"{how['upper']}:{path}"]
        elif mode == "private":
            argv += ["-t", path]
        else:
            argv += ["-w", path]
    for h in report["hidden"]:
        argv += ["-D" if h["dir"] else "-H", h["path"]]
    listing = report.get("home_listing")
    if listing:
        argv += ["-h", listing["home"]]
        if listing.get("homes"):
            argv += ["-T", listing["homes"]]
        for e in listing["entries"]:
            if e["kind"] in ("dir", "file"):  # a link is made again inside: no mount
                argv += ["-E" if e["kind"] == "dir" else "-e", e["path"]]
    return argv + ["--", "/bin/true"]


def bwrap_with_overlay():
    """A bubblewrap that has --overlay, or None."""
    for candidate in (NEW_BWRAP, shutil.which("bwrap")):
        if candidate and "--overlay" in subprocess.run([candidate, "--help"], capture_output=True,
                                                       text=True).stdout:
            return candidate
    return None


def same_policy_bwrap(bwrap, work, report):
    """bubblewrap running qwrap's policy for this home: the host read-only,
    /dev, a private /tmp and IPC namespace, the workspace, an overlay per
    cache (bubblewrap has no shared one), /dev/null over each hidden file."""
    ws = report["target_dir"]
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-ipc", "--bind", ws, ws]
    for i, c in enumerate(report["layers"]["caches"]):
        layer = os.path.join(work, "bwrap-layers", str(i))
        for d in ("upper", "work"):
            os.makedirs(os.path.join(layer, d), exist_ok=True)
            chown_user(os.path.join(layer, d))
        argv += ["--overlay-src", c["path"], "--overlay", f"{layer}/upper", f"{layer}/work", c["path"]]
    for h in report["hidden"]:
        argv += ["--tmpfs", h["path"]] if h["dir"] else ["--ro-bind", "/dev/null", h["path"]]
    return argv + ["--die-with-parent", "/bin/true"]


def like_with_like(work, qwrap, layers, n):
    rows = []
    narrow = lambda ws: ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--bind", ws, ws, "--die-with-parent"]

    log("like with like: a fresh home")
    fresh, fresh_ws = os.path.join(work, "fresh"), os.path.join(work, "fresh-ws")
    for d in (fresh, fresh_ws):
        os.makedirs(d)
        chown_user(d)
    subprocess.run(as_user([qwrap, "run", "--", "/bin/true"], fresh), cwd=fresh_ws, check=True)
    c_fresh = layers_argv(layers, inspect(qwrap, fresh_ws, fresh))
    t = side_by_side({"qwrap": [qwrap, "run", "--", "/bin/true"], "c": c_fresh,
                     "bwrap": narrow(fresh_ws) + ["/bin/true"]}, n, 20, fresh_ws, home=fresh)
    rows.append(("a fresh home (`~/.cache` made, empty: its layer bound bare) vs bubblewrap's narrow line",
                 t["qwrap"], t["c"], t["bwrap"], "≤ 0.75× bwrap", t["qwrap"] <= 0.75 * t["bwrap"]))

    log("like with like: a developer's home")
    home, ws = os.path.join(work, "home"), os.path.join(work, "dev-ws")
    owned_tree(home, {**{f: "secret\n" for f in CREDENTIALS}, ".cache/pip/wheel": "w\n",
                      ".cargo/registry/index/crate": "c\n", ".npm/_cacache/index": "i\n"})
    owned_tree(ws, {"Cargo.toml": "[package]\nname = \"b\"\n", "package.json": "{}\n"})
    subprocess.run(as_user([qwrap, "run", "--", "/bin/true"], home), cwd=ws, check=True)
    report = inspect(qwrap, ws, home)
    c_home = layers_argv(layers, report)
    cases = {"qwrap": [qwrap, "run", "--", "/bin/true"], "c": c_home, "bwrap": narrow(ws) + ["/bin/true"]}
    newer = bwrap_with_overlay()
    if newer:
        cases["same"] = same_policy_bwrap(newer, work, report)
    t = side_by_side(cases, n, 20, ws, home=home)
    home_wall = t["qwrap"]
    caches = len(report["layers"]["caches"])
    what = f"a Rust + Node workspace, {caches} caches (3 holding files), {len(report['hidden'])} hidden files"
    rows.append((f"{what}, vs bubblewrap's narrow line", t["qwrap"], t["c"], t["bwrap"], "≤ 1.05× the C program",
                 t["qwrap"] <= 1.05 * t["c"]))
    if newer:
        version = subprocess.run([newer, "--version"], capture_output=True, text=True).stdout.strip()
        rows.append((f"the same, vs {version} running the same policy (an overlay per cache)", t["qwrap"], t["c"],
                     t["same"], "≤ 0.6× bwrap", t["qwrap"] <= 0.6 * t["same"]))
    else:
        rows.append(("the same, vs bubblewrap running the same policy: SKIP, no bubblewrap with --overlay "
                     "(0.9 or later; set QWRAP_BENCH_BWRAP to one)", None, None, None, "≤ 0.6× bwrap", None))
    steps = breakdown(qwrap, ws, 50 if QUICK else 300, home)

    log("like with like: bwrap mode, --network closed")
    plain_ws = os.path.join(work, "plain-ws")
    os.makedirs(plain_ws)
    chown_user(plain_ws)
    line = narrow(plain_ws) + ["/bin/true"]
    t = side_by_side({"qwrap": [qwrap, "bwrap", *line[1:]], "bwrap": line,
                     "closed": [qwrap, "run", "--network", "closed", "--", "/bin/true"],
                     "bwrap-net": line[:-1] + ["--unshare-net", "/bin/true"],
                     "landlock": [qwrap, "run", "--isolation", "landlock", "--", "/bin/true"]}, n, 20, plain_ws)
    rows.append(("bwrap mode running bubblewrap's narrow line (`qwrap bwrap ARGS`)", t["qwrap"], None, t["bwrap"],
                 "≤ 0.65× bwrap", t["qwrap"] <= 0.65 * t["bwrap"]))
    rows.append(("`--network closed` vs bubblewrap's narrow line with `--unshare-net`", t["closed"], None,
                 t["bwrap-net"], "", None))
    rows.append(("`--isolation landlock` (no namespaces) vs bubblewrap's narrow line", t["landlock"], None,
                 t["bwrap"], "the fastest row", t["landlock"] <= min(t["qwrap"], t["closed"])))
    return {"rows": rows, "steps": steps, "wall": home_wall}


def fmt(v):
    return "—" if v is None else f"{v:.2f} ms"


def ratio(a, b):
    return "—" if a is None or b is None else f"{a / b:.3f}×"


def print_like(like):
    print("Start-up like with like (medians; within a group the runs are interleaved in a shuffled order; "
          "C = bench/layers.c doing exactly qwrap's layers for the same home):")
    print()
    print("| case | qwrap | C program | bwrap | qwrap/C | qwrap/bwrap | target | met |")
    print("|---|---|---|---|---|---|---|---|")
    for name, q, c, b, target, met in like["rows"]:
        print(f"| {name} | {fmt(q)} | {fmt(c)} | {fmt(b)} | {ratio(q, c)} | {ratio(q, b)} | {target} | "
              f"{'' if met is None else ('yes' if met else 'NO')} |")
    print()
