#![no_main]
//! The writable-root resolver on a real directory tree, with arbitrary
//! workspace, includes, read-only paths, environment and config. Whatever it
//! grants obeys the rules: no root is the home directory or an ancestor of
//! it, roots are real directories, none nests in another, and every
//! read-only path lies in a root.

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use qwrap::policy::settings::{ConfigText, Settings};
use qwrap::policy::{Caller, CliSettings, PathSpec, Request, Sourced, resolve};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[derive(Arbitrary, Debug)]
enum Pick {
    Root,
    Home,
    Tree(String),
    Abs(String),
}

#[derive(Arbitrary, Debug)]
struct Input {
    workspace: Pick,
    cwd: Pick,
    includes: Vec<Pick>,
    read_only: Vec<Pick>,
    home: Option<Pick>,
    tmpdir: Option<Pick>,
    cache: Option<Pick>,
    tmp_host: bool,
    qwen: bool,
    config: String,
}

/// home/u/{proj/.git,.ssh,.cache,.qwen/.env}, srv/data, a linked worktree
/// with a forged back-pointer, a symlink loop and a link into home.
fn tree() -> &'static Path {
    static TREE: OnceLock<PathBuf> = OnceLock::new();
    TREE.get_or_init(|| {
        let d = tempfile::tempdir().unwrap().keep();
        let d = std::fs::canonicalize(d).unwrap();
        for p in [
            "home/u/proj/.git/hooks",
            "home/u/.ssh",
            "home/u/.cache",
            "home/u/.qwen",
            "srv/data",
            "wt",
        ] {
            std::fs::create_dir_all(d.join(p)).unwrap();
        }
        std::fs::write(d.join("home/u/.qwen/.env"), "K=V\n").unwrap();
        std::fs::write(
            d.join("wt/.git"),
            format!("gitdir: {}\n", d.join("home/u/.ssh").display()),
        )
        .unwrap();
        std::os::unix::fs::symlink(d.join("loop"), d.join("loop")).unwrap();
        std::os::unix::fs::symlink(d.join("home/u"), d.join("srv/home-link")).unwrap();
        d
    })
}

fn path(p: &Pick) -> PathBuf {
    let t = tree();
    match p {
        Pick::Root => PathBuf::from("/"),
        Pick::Home => t.join("home/u"),
        Pick::Tree(rel) => t.join(rel.trim_start_matches('/')),
        Pick::Abs(a) => PathBuf::from(a),
    }
}

fuzz_target!(|input: Input| {
    let t = tree();
    let mut env: BTreeMap<OsString, OsString> = BTreeMap::new();
    if let Some(p) = &input.tmpdir {
        env.insert("TMPDIR".into(), path(p).into());
    }
    if let Some(p) = &input.cache {
        env.insert("XDG_CACHE_HOME".into(), path(p).into());
    }
    let home = input.home.as_ref().map(path).unwrap_or_else(|| t.join("home/u"));
    let caller = Caller::described((1000, 1000), path(&input.cwd), Some(home.clone()), env);
    let cli = CliSettings {
        tmp: input.tmp_host.then_some(qwrap::policy::TmpMode::Host),
        profile: if input.qwen { vec!["qwen".into()] } else { vec![] },
        ..Default::default()
    };
    let cfg = ConfigText {
        path: "/etc/qwrap/config.toml".into(),
        text: input.config.clone(),
    };
    let lookup = |k: &str| caller.var(k);
    let settings = match Settings::load(&cli, &lookup, &[cfg]) {
        Ok(s) => s,
        Err(_) => return,
    };
    let mut request = Request::with_defaults(vec!["true".into()]);
    request.workspace = Some(path(&input.workspace));
    request.settings = settings;
    request.settings.include.extend(
        input
            .includes
            .iter()
            .map(|p| Sourced::new(PathSpec::Literal(path(p)), "--include")),
    );
    request.settings.read_only.extend(
        input
            .read_only
            .iter()
            .map(|p| Sourced::new(PathSpec::Literal(path(p)), "--ro")),
    );
    let Ok(policy) = resolve(&request, &caller) else {
        return;
    };
    let real_home = std::fs::canonicalize(&home).unwrap_or(home);
    for (i, r) in policy.writable_roots.iter().enumerate() {
        assert!(r.path.is_absolute(), "{r:?}");
        assert!(
            !real_home.starts_with(&r.path),
            "{r:?} is home or an ancestor of {real_home:?}"
        );
        // A missing cache, or a profile's missing state dir, is made
        // before the sandbox starts.
        assert!(
            r.path.is_dir()
                || r.cache.as_ref().is_some_and(|c| c.missing)
                || policy.create_before.contains(&r.path),
            "{r:?}"
        );
        // Roots do not nest, except one written through inside a cache
        // that is not (it is mounted over the cache).
        let overlaid = |w: &qwrap::policy::WritableRoot| {
            w.cache.as_ref().is_some_and(|c| c.mode != qwrap::policy::CacheMode::Shared)
        };
        for other in &policy.writable_roots[i + 1..] {
            let (outer, inner) = if other.path.starts_with(&r.path) {
                (r, other)
            } else if r.path.starts_with(&other.path) {
                (other, r)
            } else {
                continue;
            };
            assert!(
                outer.path != inner.path && overlaid(outer) && inner.cache.is_none(),
                "{r:?} nests {other:?}"
            );
        }
    }
    for ro in &policy.read_only {
        assert!(
            policy.writable_roots.iter().any(|r| ro.path.starts_with(&r.path)),
            "{ro:?}"
        );
    }
});
