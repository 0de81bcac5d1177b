//! `qwrap run -- TOOL` works without flags for cargo, npm, pip, go and
//! make/gcc: the toolchain profiles are applied from the workspace's files,
//! a second run reuses what the first fetched, and the host's caches do not
//! change. Packages are tiny and come from the public registries.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// The Rust toolchain these tests were built with, where any uid can run
/// it: hard links (or a copy) of its bin/ and lib/ under /var/tmp.
fn rust() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let cargo = PathBuf::from(env!("CARGO"));
        let sysroot = cargo.parent().and_then(Path::parent).unwrap().to_path_buf();
        let dir = PathBuf::from(format!("/var/tmp/qwrap-test-rust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        for sub in ["bin", "lib"] {
            let linked = std::process::Command::new("cp")
                .arg("-al")
                .arg(sysroot.join(sub))
                .arg(&dir)
                .status()
                .unwrap();
            if !linked.success() {
                let copied = std::process::Command::new("cp")
                    .arg("-a")
                    .arg(sysroot.join(sub))
                    .arg(&dir)
                    .status()
                    .unwrap();
                assert!(copied.success());
            }
        }
        dir
    })
}

fn run(f: &Fixture, api: &str, opts: &[&str], script: &str) -> Output {
    f.run_sh(api, opts, script)
}

fn cargo(f: &Fixture, api: &str, opts: &[&str], script: &str) -> Output {
    let mut c = f.qwrap(&["run"]);
    c.args(opts).args(["--", "sh", "-c", script]);
    c.env("QWRAP_MOUNT_API", api)
        .env("RUSTC", rust().join("bin/rustc"))
        .env("CARGO", rust().join("bin/cargo"));
    c.output().unwrap()
}

/// stdout and stderr, asserting success.
#[track_caller]
fn both(o: &Output) -> String {
    ok(o);
    stdout(o) + &stderr(o)
}

#[test]
fn cargo_fetches_a_crate_once() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            f.write(
                "ws/Cargo.toml",
                "[package]\nname = \"t\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncfg-if = \"1\"\n",
                0o644,
            );
            f.mkdir("ws/src");
            f.write("ws/src/main.rs", "fn main() {}\n", 0o644);
            let out = both(&cargo(&f, api, &[], "$CARGO build"));
            assert!(out.contains("Downloaded cfg-if"), "{who:?} {api}: {out}");
            // The host's registry is not made: the listed home mounts its
            // layer on a point of its own tmpfs.
            let registry = f.home().join(".cargo/registry");
            assert!(!registry.exists(), "{:?}", listing(&registry));
            // Again from scratch, with no network: the crate is in the layer.
            let out = both(&cargo(
                &f,
                api,
                &["--network", "closed"],
                "rm -rf target && $CARGO build",
            ));
            assert!(!out.contains("Downloaded"), "{who:?} {api}: {out}");
            assert!(out.contains("Compiling cfg-if"), "{out}");
        }
    }
    std::fs::remove_dir_all(rust()).unwrap();
}

#[test]
fn npm_installs_a_package_once() {
    for who in Who::all() {
        let api = if who == Who::Root { "legacy" } else { "new" };
        let f = Fixture::new(who);
        f.write(
            "ws/package.json",
            "{\"name\":\"t\",\"version\":\"1.0.0\",\"dependencies\":{\"is-number\":\"7.0.0\"}}\n",
            0o644,
        );
        ok(&run(&f, api, &[], "npm install --no-audit --no-fund"));
        assert!(f.ws().join("node_modules/is-number/package.json").is_file());
        assert!(listing(&f.home().join(".npm")).is_empty());
        let o = run(
            &f,
            api,
            &["--network", "closed"],
            "rm -rf node_modules && npm install --offline --no-audit --no-fund",
        );
        ok(&o);
        assert!(f.ws().join("node_modules/is-number/package.json").is_file());
    }
}

#[test]
fn pip_installs_into_a_venv_and_the_user_site() {
    for who in Who::all() {
        let api = if who == Who::Root { "new" } else { "legacy" };
        let f = Fixture::new(who);
        f.write("ws/requirements.txt", "six\n", 0o644);
        let out = both(&run(
            &f,
            api,
            &[],
            "python3 -m venv .venv && .venv/bin/pip install --disable-pip-version-check six",
        ));
        assert!(out.contains("Successfully installed six"), "{out}");
        let out = both(&run(
            &f,
            api,
            &[],
            "python3 -m pip install --disable-pip-version-check --user --break-system-packages iniconfig && python3 -c 'import iniconfig; print(iniconfig.__file__)'",
        ));
        assert!(out.contains(".local/lib/python"), "{out}");
        // The next sandbox of the workspace imports what the first installed
        // (pip's HTTP cache cannot show reuse here: the registry's answers
        // carry no Cache-Control, so pip stores none of them).
        let out = both(&run(
            &f,
            api,
            &[],
            "python3 -c 'import iniconfig; print(iniconfig.__file__)'",
        ));
        assert!(out.contains(".local/lib/python"), "{out}");
        // Neither pip's cache nor the user site changed on the host.
        assert!(listing(&f.home().join(".cache")).is_empty());
        assert!(listing(&f.home().join(".local/lib")).is_empty());
    }
}

#[test]
fn go_build_keeps_its_build_cache_in_the_layer() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.write("ws/go.mod", "module example.com/t\n\ngo 1.19\n", 0o644);
        f.write("ws/main.go", "package main\n\nfunc main() {}\n", 0o644);
        ok(&run(&f, "new", &[], "go build -o t . && test -x t"));
        assert!(listing(&f.home().join(".cache")).is_empty());
        // The next sandbox finds the build cache the first one filled.
        let out = both(&run(&f, "legacy", &[], "ls \"$(go env GOCACHE)\" | wc -l"));
        let entries: usize = out.trim().parse().unwrap_or(0);
        assert!(entries > 1, "{who:?}: {out}");
    }
}

#[test]
fn make_and_gcc() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.write("ws/Makefile", "t: t.c\n\tcc -o t t.c\n", 0o644);
        f.write("ws/t.c", "int main(void) { return 0; }\n", 0o644);
        ok(&run(&f, "new", &[], "make && ./t"));
    }
}
