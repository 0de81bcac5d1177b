//! Cache roots: where they come from, their modes, nesting, detection.

use super::*;

#[test]
fn cache_root_from_xdg_or_home() {
    let t = Tree::new();
    // Missing: created before the sandbox starts, overlaid.
    let p = resolve(&req(&["true"]), &t.caller("srv/data")).unwrap();
    assert_eq!(caches(&p), vec![(t.p("home/u/.cache"), CacheMode::Overlay, true)]);
    fs::create_dir_all(t.p("home/u/.cache")).unwrap();
    let p = resolve(&req(&["true"]), &t.caller("srv/data")).unwrap();
    assert_eq!(
        caches(&p),
        vec![(t.p("home/u/.cache"), CacheMode::Overlay, false)]
    );
    assert_eq!(p.writable_roots[0].reason, RootReason::Cache);
    assert_eq!(p.writable_roots[0].cache.as_ref().unwrap().layer, ".cache");
    let mut c = t.caller("home/u/proj");
    c.env.insert("XDG_CACHE_HOME".into(), t.p("tmp").into_os_string());
    let p = resolve(&req(&["true"]), &c).unwrap();
    assert_eq!(caches(&p), vec![(t.p("tmp"), CacheMode::Overlay, false)]);
    let tmp = p.writable_roots.iter().find(|r| r.path == t.p("tmp")).unwrap();
    assert_eq!(
        tmp.cache.as_ref().unwrap().layer,
        t.p("tmp").display().to_string().replace('/', "%2F")
    );
    // A variable cannot name a home path the include rules refuse.
    c.env
        .insert("XDG_CACHE_HOME".into(), t.p("home/u/.ssh").into_os_string());
    let p = resolve(&req(&["true"]), &c).unwrap();
    assert!(caches(&p).is_empty());
    assert!(
        p.dropped
            .iter()
            .any(|d| d.path == t.p("home/u/.ssh") && d.why.contains("variable")),
        "{:?}",
        p.dropped
    );
}

#[test]
fn cache_modes_and_nesting() {
    let t = Tree::new();
    fs::create_dir_all(t.p("home/u/.cache/ws")).unwrap();
    let mut r = req(&["true"]);
    r.settings.cache = Sourced::new(CacheMode::Shared, "--cache");
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert_eq!(caches(&p), vec![(t.p("home/u/.cache"), CacheMode::Shared, false)]);
    // A workspace inside an overlaid cache stays a root of its own, written
    // through; a cache inside a workspace is the workspace.
    let p = resolve(&req(&["true"]), &t.caller("home/u/.cache/ws")).unwrap();
    assert_eq!(paths(&p), vec![t.p("home/u/.cache/ws")]);
    assert_eq!(
        caches(&p),
        vec![(t.p("home/u/.cache"), CacheMode::Overlay, false)]
    );
    let mut c = t.caller("srv/data");
    fs::create_dir_all(t.p("srv/data/c")).unwrap();
    c.env
        .insert("XDG_CACHE_HOME".into(), t.p("srv/data/c").into_os_string());
    let p = resolve(&req(&["true"]), &c).unwrap();
    assert_eq!(paths(&p), vec![t.p("srv/data")]);
    assert!(caches(&p).is_empty());
}

#[test]
fn toolchain_profiles_are_detected_by_their_files() {
    let t = Tree::new();
    fs::write(t.p("home/u/proj/Cargo.toml"), "").unwrap();
    let mut r = req(&["true"]);
    r.settings = Settings::load(&CliSettings::default(), &|_| None, &[]).unwrap();
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert!(
        p.profiles
            .iter()
            .any(|x| x.value == "rust" && x.source == "detected Cargo.toml"),
        "{:?}",
        p.profiles
    );
    let c: Vec<PathBuf> = caches(&p).into_iter().map(|c| c.0).collect();
    assert!(
        c.contains(&t.p("home/u/.cargo/registry")) && c.contains(&t.p("home/u/.cargo/git")),
        "{c:?}"
    );
    assert!(!c.iter().any(|p| p.ends_with(".cargo") || p.ends_with("bin")));
    let cli = CliSettings {
        no_detect: true,
        ..Default::default()
    };
    r.settings = Settings::load(&cli, &|_| None, &[]).unwrap();
    let p = resolve(&r, &t.caller("home/u/proj")).unwrap();
    assert!(p.profiles.is_empty());
    assert_eq!(caches(&p).len(), 1, "only ~/.cache");
}
