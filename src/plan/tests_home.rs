//! Plan tests of the home's layer: one overlay for the caches inside the
//! home, and `--home overlay`.

use super::*;
use crate::plan::{AttachTree, HomeCaches, Landlock, MakeOverlay};
use crate::policy::{CacheMode, CacheRoot, HomeMode, Sourced};

/// A workspace in the home with two overlaid caches in it and one outside,
/// on a host where overlays can be had (slot 0).
fn with_caches(home_mode: HomeMode) -> (Policy, HostFacts) {
    let mut pol = policy(&["/home/u/proj"], &[], NetworkMode::Open, TmpMode::Private);
    pol.home = Some("/home/u".into());
    pol.cache_set = Some("/home/u/.local/state/qwrap/caches/proj-1".into());
    pol.settings.home = Sourced::new(home_mode, "test");
    for (path, layer) in [
        ("/home/u/.cache", ".cache"),
        ("/home/u/.npm", ".npm"),
        ("/opt/cache", "opt"),
    ] {
        pol.writable_roots.push(WritableRoot {
            path: path.into(),
            reason: RootReason::Cache,
            source: "test".into(),
            cache: Some(CacheRoot {
                mode: CacheMode::Overlay,
                layer: layer.into(),
                missing: false,
            }),
        });
    }
    let mut h = host(MountApi::New);
    h.caches.slot = Some(0);
    h.caches.in_home = vec!["/home/u/.cache".into(), "/home/u/.npm".into()];
    h.caches.whole_home = (home_mode == HomeMode::Overlay).then(Vec::new);
    (pol, h)
}

fn count(plan: &Plan, pred: impl Fn(&Step) -> bool) -> usize {
    plan.steps.iter().filter(|s| pred(s)).count()
}

#[test]
fn the_caches_in_the_home_come_from_one_overlay() {
    let (pol, h) = with_caches(HomeMode::ReadOnly);
    for api in [MountApi::New, MountApi::Legacy] {
        let plan = build(&pol, &host_with(&h, api));
        let home = plan
            .steps
            .iter()
            .find_map(|s| match s {
                Step::HomeCaches(HomeCaches { parts, upper, .. }) => Some((parts.clone(), upper.clone())),
                _ => None,
            })
            .expect("one overlay of the home");
        let paths: Vec<String> = home.0.iter().map(|p| p.path.display().to_string()).collect();
        assert!(
            paths
                .iter()
                .all(|p| p.ends_with("/home/u/.cache") || p.ends_with("/home/u/.npm")),
            "{paths:?}"
        );
        assert_eq!(paths.len(), 2);
        assert!(home.1.ends_with("0/%home/upper"), "{:?}", home.1);
        // The cache outside the home has its own; nothing else is overlaid.
        assert_eq!(
            count(&plan, |s| matches!(s, Step::MakeOverlay(MakeOverlay { .. }))),
            1,
            "{api:?}"
        );
        assert_eq!(
            count(&plan, |s| matches!(s, Step::HomeCaches(HomeCaches { .. }))),
            1
        );
        // Each part's tree is attached at its cache.
        for p in &home.0 {
            assert!(
                plan.steps
                    .iter()
                    .any(|s| matches!(s, Step::AttachTree(AttachTree { tree, .. }) if *tree == p.tree)),
                "{api:?}: tree {} never attached",
                p.tree
            );
        }
    }
}

fn host_with(h: &HostFacts, api: MountApi) -> HostFacts {
    HostFacts {
        mount_api: api,
        ..h.clone()
    }
}

#[test]
fn an_overlaid_home_is_one_overlay_at_the_home_and_writable_to_landlock() {
    let (pol, h) = with_caches(HomeMode::Overlay);
    let plan = build(&pol, &h);
    let home_overlays = count(
        &plan,
        |s| matches!(s, Step::MakeOverlay(MakeOverlay { lower, .. }) if lower == &[PathBuf::from("/home/u")]),
    );
    assert_eq!(home_overlays, 1);
    // The caches inside are part of it: no split, no overlay of their own.
    assert_eq!(
        count(&plan, |s| matches!(s, Step::HomeCaches(HomeCaches { .. }))),
        0
    );
    assert_eq!(
        count(&plan, |s| matches!(s, Step::MakeOverlay(MakeOverlay { .. }))),
        2
    );
    let rules = plan
        .steps
        .iter()
        .find_map(|s| match s {
            Step::Landlock(Landlock { paths, .. }) => Some(paths.clone()),
            _ => None,
        })
        .expect("landlock");
    assert!(rules.contains(&PathBuf::from("/home/u")), "{rules:?}");
    let l = assess(&pol, &h, &super::Isolation::decide(&pol, &h));
    assert!(l.home.is_applied(), "{}", l.home);
    // A mount beneath the home: read-only, degraded, and said why.
    let mut h = h;
    h.caches.whole_home = Some(vec!["/home/u/data".into()]);
    let l = assess(&pol, &h, &super::Isolation::decide(&pol, &h));
    assert!(
        matches!(&l.home, LayerState::Degraded(w) if w.contains("/home/u/data")),
        "{}",
        l.home
    );
    assert!(l.degraded().iter().any(|d| d.starts_with("home: ")));
    let plan = build(&pol, &h);
    assert_eq!(
        count(&plan, |s| matches!(s, Step::HomeCaches(HomeCaches { .. }))),
        1
    );
}
