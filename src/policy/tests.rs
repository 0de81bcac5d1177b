use super::*;
use std::collections::BTreeMap;
use std::fs;

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let t = Tree {
            dir: tempfile::tempdir().unwrap(),
        };
        for d in ["home/u/proj/sub", "home/u/.ssh", "srv/data", "tmp"] {
            fs::create_dir_all(t.p(d)).unwrap();
        }
        t
    }
    fn p(&self, rel: &str) -> PathBuf {
        fs::canonicalize(self.dir.path()).unwrap().join(rel)
    }
    fn caller(&self, cwd: &str) -> Caller {
        let mut env = BTreeMap::new();
        env.insert(OsString::from("TMPDIR"), self.p("tmp").into_os_string());
        Caller::described((1000, 1000), self.p(cwd), Some(self.p("home/u")), env)
    }
}

fn req(cmd: &[&str]) -> Request {
    Request::with_defaults(cmd.iter().map(OsString::from).collect())
}

fn lit(paths: Vec<PathBuf>, src: &str) -> Vec<Sourced<PathSpec>> {
    paths
        .into_iter()
        .map(|p| Sourced::new(PathSpec::Literal(p), src))
        .collect()
}

fn set_binds(r: &mut Request, paths: Vec<PathBuf>) {
    r.settings.include = lit(paths, "--bind");
}

fn set_ro(r: &mut Request, paths: Vec<PathBuf>) {
    r.settings.read_only = lit(paths, "--ro");
}

/// The roots written through (caches are checked on their own).
fn paths(p: &Policy) -> Vec<PathBuf> {
    p.writable_roots
        .iter()
        .filter(|r| r.cache.is_none())
        .map(|r| r.path.clone())
        .collect()
}

/// The cache roots: path, mode, whether it is created.
fn caches(p: &Policy) -> Vec<(PathBuf, CacheMode, bool)> {
    p.writable_roots
        .iter()
        .filter_map(|r| Some((r.path.clone(), r.cache.as_ref()?.mode, r.cache.as_ref()?.missing)))
        .collect()
}

#[test]
fn an_unreadable_working_directory_is_refused_not_guessed() {
    let t = Tree::new();
    let mut c = t.caller("home/u/proj");
    c.cwd = Err(rustix::io::Errno::NOENT);
    let e = resolve(&req(&["true"]), &c).unwrap_err();
    assert!(
        matches!(e, PolicyError::WorkingDirectory(rustix::io::Errno::NOENT)),
        "{e}"
    );
    // With a workspace named, resolution still needs the directory to
    // place relative paths: it is refused the same way.
    let mut r = req(&["true"]);
    r.workspace = Some(t.p("home/u/proj"));
    assert!(resolve(&r, &c).is_err());
}

#[test]
fn workspace_defaults_to_cwd() {
    let t = Tree::new();
    let p = resolve(&req(&["true"]), &t.caller("home/u/proj")).unwrap();
    assert_eq!(p.workspace, t.p("home/u/proj"));
    assert_eq!(paths(&p), vec![t.p("home/u/proj")]);
    let ws = p.writable_roots.iter().find(|r| r.path == p.workspace).unwrap();
    assert_eq!(ws.reason, RootReason::Workspace);
}

#[test]
fn relative_workspace_is_resolved_against_cwd() {
    let t = Tree::new();
    let mut r = req(&["true"]);
    r.workspace = Some("proj/sub".into());
    let p = resolve(&r, &t.caller("home/u")).unwrap();
    assert_eq!(p.workspace, t.p("home/u/proj/sub"));
}

#[test]
fn home_ancestors_and_root_are_refused() {
    let t = Tree::new();
    for ws in ["home/u", "home", "", "/"] {
        let mut r = req(&["true"]);
        r.workspace = Some(if ws == "/" { PathBuf::from("/") } else { t.p(ws) });
        let err = resolve(&r, &t.caller("srv/data")).unwrap_err();
        assert!(matches!(err, PolicyError::HomeOrAncestor { .. }), "{ws}: {err}");
        assert!(err.to_string().contains("must stay read-only"));
        assert!(err.to_string().contains("(from workspace)"));
    }
    let mut r = req(&["true"]);
    set_binds(&mut r, vec![t.p("home")]);
    let err = resolve(&r, &t.caller("srv/data")).unwrap_err();
    assert!(err.to_string().contains("(from --bind)"), "{err}");
    assert!(
        err.to_string().contains("an ancestor of the home directory"),
        "{err}"
    );
}

#[test]
fn root_is_refused_even_without_home() {
    let t = Tree::new();
    let mut c = t.caller("srv/data");
    c.home = None;
    let mut r = req(&["true"]);
    set_binds(&mut r, vec!["/".into()]);
    assert!(matches!(
        resolve(&r, &c).unwrap_err(),
        PolicyError::HomeOrAncestor { .. }
    ));
}

#[test]
fn include_inside_home_needs_a_covering_builtin() {
    let t = Tree::new();
    let mut r = req(&["true"]);
    set_binds(&mut r, vec![t.p("home/u/.ssh")]);
    let err = resolve(&r, &t.caller("srv/data")).unwrap_err();
    assert!(matches!(err, PolicyError::InsideHome { .. }), "{err}");
    // Covered by the workspace: accepted and merged into it.
    let mut r = req(&["true"]);
    set_binds(&mut r, vec![t.p("home/u/proj/sub")]);
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert_eq!(paths(&p), vec![t.p("home/u/proj")]);
}

#[test]
fn include_outside_home_is_accepted() {
    let t = Tree::new();
    let mut r = req(&["true"]);
    set_binds(&mut r, vec![t.p("srv/data")]);
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert_eq!(paths(&p), vec![t.p("home/u/proj"), t.p("srv/data")]);
    let data = p
        .writable_roots
        .iter()
        .find(|r| r.path == t.p("srv/data"))
        .unwrap();
    assert_eq!(data.reason, RootReason::Include);
    assert_eq!(data.source, "--bind");
}

#[test]
fn symlinked_roots_are_resolved_and_checked() {
    let t = Tree::new();
    std::os::unix::fs::symlink(t.p("home/u/.ssh"), t.p("srv/ssh-link")).unwrap();
    let mut r = req(&["true"]);
    set_binds(&mut r, vec![t.p("srv/ssh-link")]);
    // The link is outside home, its target is not: refused.
    assert!(matches!(
        resolve(&r, &t.caller("srv/data")).unwrap_err(),
        PolicyError::InsideHome { .. }
    ));
    std::os::unix::fs::symlink(t.p("srv/data"), t.p("tmp/data-link")).unwrap();
    let mut r = req(&["true"]);
    set_binds(&mut r, vec![t.p("tmp/data-link")]);
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert!(paths(&p).contains(&t.p("srv/data")));
}

#[test]
fn missing_roots_are_dropped_and_reported() {
    let t = Tree::new();
    let mut r = req(&["true"]);
    set_binds(&mut r, vec![t.p("srv/nope")]);
    set_ro(&mut r, vec![t.p("home/u/proj/missing")]);
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert_eq!(paths(&p), vec![t.p("home/u/proj")]);
    // ~/.cache is missing too: a cache is created, not dropped.
    let dropped: Vec<&PathBuf> = p.dropped.iter().map(|d| &d.path).collect();
    assert_eq!(dropped, [&t.p("srv/nope"), &t.p("home/u/proj/missing")]);
}

#[test]
fn missing_workspace_is_an_error() {
    let t = Tree::new();
    let mut r = req(&["true"]);
    r.workspace = Some(t.p("srv/nope"));
    assert!(matches!(
        resolve(&r, &t.caller("srv")).unwrap_err(),
        PolicyError::Workspace { .. }
    ));
    fs::write(t.p("srv/file"), "").unwrap();
    r.workspace = Some(t.p("srv/file"));
    let err = resolve(&r, &t.caller("srv")).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[test]
fn file_bind_is_an_error() {
    let t = Tree::new();
    fs::write(t.p("srv/file"), "").unwrap();
    let mut r = req(&["true"]);
    set_binds(&mut r, vec![t.p("srv/file")]);
    assert!(matches!(
        resolve(&r, &t.caller("home/u/proj")).unwrap_err(),
        PolicyError::BadPath { .. }
    ));
}

#[test]
fn nested_roots_merge_and_order_is_deterministic() {
    let t = Tree::new();
    fs::create_dir_all(t.p("srv/data/inner")).unwrap();
    let mut r = req(&["true"]);
    set_binds(
        &mut r,
        vec![t.p("srv/data/inner"), t.p("srv/data"), t.p("srv/data")],
    );
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert_eq!(paths(&p), vec![t.p("home/u/proj"), t.p("srv/data")]);
    let mut r2 = r.clone();
    r2.settings.include.reverse();
    assert_eq!(paths(&resolve(&r2, &t.caller("home/u/proj")).unwrap()), paths(&p));
}

#[test]
fn host_tmp_is_a_root_and_refused_when_home_is_inside() {
    let t = Tree::new();
    let mut r = req(&["true"]);
    r.settings.tmp = Sourced::new(TmpMode::Host, "--tmp");
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert!(
        p.writable_roots
            .iter()
            .any(|w| w.path == t.p("tmp") && w.reason == RootReason::Temp)
    );
    assert!(!p.env.set.iter().any(|(k, _)| k == "TMPDIR"));
    let mut c = t.caller("home/u/proj");
    c.env.insert("TMPDIR".into(), t.p("home").into_os_string());
    assert!(matches!(
        resolve(&r, &c).unwrap_err(),
        PolicyError::HomeOrAncestor { .. }
    ));
}

#[test]
fn read_only_paths_must_sit_in_a_root() {
    let t = Tree::new();
    let mut r = req(&["true"]);
    set_ro(&mut r, vec!["sub".into(), t.p("srv/data")]);
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert_eq!(
        p.read_only,
        vec![ReadOnlyPath {
            path: t.p("home/u/proj/sub"),
            within: t.p("home/u/proj"),
            source: "--ro".into(),
        }]
    );
    assert!(p.dropped.iter().any(|d| d.path == t.p("srv/data")));
}

#[test]
fn empty_command_is_an_error() {
    let t = Tree::new();
    assert_eq!(
        resolve(&req(&[]), &t.caller("srv")).unwrap_err(),
        PolicyError::NoCommand
    );
}

#[test]
fn environment_rules_order() {
    let e = EnvRules::build(
        TmpMode::Private,
        &[
            ("DISPLAY".into(), ":9".into()),
            ("SANDBOX".into(), "other".into()),
            ("A".into(), "1".into()),
        ],
        &["B".into(), "A".into()],
    );
    assert_eq!(
        e.unset,
        vec![OsString::from("WAYLAND_DISPLAY"), "MIR_SOCKET".into(), "B".into()]
    );
    let got = e.apply(vec![
        ("PATH".into(), "/bin".into()),
        ("B".into(), "x".into()),
        ("MIR_SOCKET".into(), "m".into()),
        ("TMPDIR".into(), "/host/tmp".into()),
    ]);
    let as_str: Vec<(String, String)> = got
        .iter()
        .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
        .collect();
    let pairs: Vec<(&str, &str)> = as_str.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        pairs,
        vec![
            ("PATH", "/bin"),
            ("TMPDIR", "/tmp"),
            ("CHROME_CONFIG_HOME", "/tmp/.chrome-config"),
            ("DISPLAY", ":9"),
            ("A", "1"),
            ("SANDBOX", "qwrap")
        ]
    );
}

#[test]
fn mode_parsers() {
    assert_eq!("open".parse::<NetworkMode>(), Ok(NetworkMode::Open));
    assert_eq!("closed".parse::<NetworkMode>(), Ok(NetworkMode::Closed));
    assert_eq!("proxied".parse::<NetworkMode>(), Ok(NetworkMode::Proxied));
    for bad in ["", "Open", "proxy", "closed "] {
        assert!(bad.parse::<NetworkMode>().is_err(), "{bad:?}");
    }
    assert_eq!("private".parse::<TmpMode>(), Ok(TmpMode::Private));
    assert_eq!("host".parse::<TmpMode>(), Ok(TmpMode::Host));
    assert!("shared".parse::<TmpMode>().is_err());
}

fn roots_with_reasons(p: &Policy) -> Vec<(PathBuf, RootReason)> {
    p.writable_roots
        .iter()
        .filter(|r| r.cache.is_none())
        .map(|r| (r.path.clone(), r.reason))
        .collect()
}

#[test]
fn linked_worktree_grants_git_roots_and_ignores_git_dir() {
    let t = Tree::new();
    let common = t.p("srv/repo/.git");
    let gitdir = common.join("worktrees/wt");
    fs::create_dir_all(&gitdir).unwrap();
    fs::create_dir_all(t.p("home/u/wt")).unwrap();
    fs::write(t.p("home/u/wt/.git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
    fs::write(gitdir.join("commondir"), "../..\n").unwrap();
    fs::write(
        gitdir.join("gitdir"),
        format!("{}\n", t.p("home/u/wt/.git").display()),
    )
    .unwrap();
    let mut c = t.caller("home/u/wt");
    // A GIT_DIR in the environment must not redirect discovery.
    c.env
        .insert("GIT_DIR".into(), t.p("home/u/.ssh").into_os_string());
    c.env
        .insert("GIT_COMMON_DIR".into(), t.p("home/u/.ssh").into_os_string());
    let p = resolve(&req(&["true"]), &c).unwrap();
    assert_eq!(p.git.checkout, Checkout::LinkedWorktree);
    assert_eq!(
        roots_with_reasons(&p),
        vec![
            (t.p("home/u/wt"), RootReason::Workspace),
            (common, RootReason::Git)
        ]
    );
    assert!(!paths(&p).contains(&t.p("home/u/.ssh")));
}

#[test]
fn qwen_profile_reproduces_qwen_code() {
    let t = Tree::new();
    fs::create_dir_all(t.p("home/u/.qwen")).unwrap();
    fs::write(t.p("home/u/.qwen/.env"), "KEY=1\n").unwrap();
    let cli = CliSettings {
        profile: vec!["qwen".into()],
        ..Default::default()
    };
    let mut r = req(&["true"]);
    r.settings = Settings::load(&cli, &|_| None, &[]).unwrap();
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert_eq!(p.settings.tmp.value, TmpMode::Host);
    // npm's cache is overlaid (created when missing), Qwen's own dirs not.
    assert_eq!(
        caches(&p),
        vec![
            (t.p("home/u/.cache"), CacheMode::Overlay, true),
            (t.p("home/u/.npm"), CacheMode::Overlay, true)
        ]
    );
    assert_eq!(
        roots_with_reasons(&p),
        vec![
            (t.p("home/u/.qwen"), RootReason::Profile),
            (t.p("home/u/proj"), RootReason::Workspace),
            (t.p("tmp"), RootReason::Temp),
        ]
    );
    assert_eq!(p.read_only.len(), 1);
    assert_eq!(p.read_only[0].path, t.p("home/u/.qwen/.env"));
    assert_eq!(p.read_only[0].source, "profile qwen");
    // Its settings, missing here, are named at exit if made inside.
    assert!(
        p.watched.contains(&t.p("home/u/.qwen/settings.json")),
        "{:?}",
        p.watched
    );
    let dropped: Vec<String> = p.dropped.iter().map(|d| d.why.clone()).collect();
    assert!(
        dropped.iter().any(|w| w.contains("$QWEN_RUNTIME_DIR is not set")),
        "{dropped:?}"
    );
    assert!(
        !p.dropped.iter().any(|d| d.path == t.p("home/u/.npm")),
        "{:?}",
        p.dropped
    );
    // QWEN_HOME moves the global dir and its .env.
    fs::create_dir_all(t.p("srv/qh")).unwrap();
    fs::write(t.p("srv/qh/.env"), "").unwrap();
    let mut c = t.caller("home/u/proj");
    c.env.insert("QWEN_HOME".into(), t.p("srv/qh").into_os_string());
    let p = resolve(&r, &c).unwrap();
    assert!(roots_with_reasons(&p).contains(&(t.p("srv/qh"), RootReason::Profile)));
    assert_eq!(p.read_only[0].path, t.p("srv/qh/.env"));
}

#[test]
fn user_profiles_obey_the_include_rules() {
    let t = Tree::new();
    let cfg = settings::ConfigText {
        path: "/u.toml".into(),
        text: "[profiles.keys]\ninclude = [\"~/.ssh\"]\n".into(),
    };
    let cli = CliSettings {
        profile: vec!["keys".into()],
        ..Default::default()
    };
    let mut r = req(&["true"]);
    r.settings = Settings::load(&cli, &|_| None, &[cfg]).unwrap();
    let err = resolve(&r, &t.caller("srv/data")).unwrap_err();
    assert!(matches!(err, PolicyError::InsideHome { .. }), "{err}");
    assert!(err.to_string().contains("profile keys"), "{err}");
}

#[path = "tests_caches.rs"]
mod caches_tests;
