//! Plan tests of the layers: printed calls, Landlock, socket masks,
//! protected directories, inherited descriptors and the warden.

use super::*;
use crate::plan::{
    AttachTree, BindMount, ClaimPty, CreateHostDir, Landlock, MakeMountPoint, MountDevpts, MountTmpfs,
    ReopenFd, SealFds, Unshare,
};

#[test]
fn every_step_prints_as_a_call_and_has_a_purpose() {
    let pol = policy(&["/tmp/w"], &["/tmp/w/r"], NetworkMode::Closed, TmpMode::Private);
    for api in [MountApi::New, MountApi::Legacy] {
        for s in build(&pol, &host(api)).steps {
            let call = s.to_string();
            assert!(call.contains('(') && call.contains(')'), "{call}");
            assert!(!s.purpose().is_empty());
        }
    }
}

fn layers_with(abi: u32, mode: crate::policy::LandlockMode) -> (Policy, Layers) {
    let mut pol = policy(&["/w"], &[], NetworkMode::Open, TmpMode::Private);
    pol.settings.landlock = crate::policy::Sourced::new(mode, "test");
    let mut h = host(MountApi::New);
    h.landlock_abi = abi;
    let l = assess(&pol, &h, &super::Isolation::decide(&pol, &h));
    (pol, l)
}

#[test]
fn landlock_layers_follow_the_abi() {
    use crate::policy::LandlockMode::*;
    let (pol, l) = layers_with(7, BestEffort);
    assert!(l.landlock_filesystem.is_applied() && l.landlock_scopes.is_applied());
    assert_eq!(missing_required(&pol, &l), None);
    let (pol, l) = layers_with(5, BestEffort);
    assert!(l.landlock_filesystem.is_applied());
    assert!(matches!(l.landlock_scopes, LayerState::Degraded(ref w) if w.contains("ABI 5 < 6")));
    assert_eq!(missing_required(&pol, &l), None);
    let (pol, l) = layers_with(5, Require);
    assert!(
        missing_required(&pol, &l)
            .unwrap()
            .contains("Landlock scopes degraded")
    );
    let (pol, l) = layers_with(0, Require);
    assert!(missing_required(&pol, &l).unwrap().contains("no Landlock"));
    let (_, l) = layers_with(7, Off);
    assert!(matches!(l.landlock_filesystem, LayerState::Off(_)));
    assert_eq!(l.landlock_abi, 0);
}

#[test]
fn build_refuses_what_cannot_hold_and_returns_the_layers_beside_the_plan() {
    use crate::policy::LandlockMode::*;
    let (pol, _) = layers_with(0, Require);
    let mut h = host(MountApi::New);
    h.landlock_abi = 0;
    let refused = super::super::build(&pol, &h).unwrap_err();
    assert!(refused.message.contains("no Landlock"), "{}", refused.message);
    assert_eq!(
        refused.layers,
        assess(&pol, &h, &super::Isolation::decide(&pol, &h))
    );
    h.landlock_abi = 7;
    let (_, layers) = super::super::build(&pol, &h).unwrap();
    assert_eq!(layers, assess(&pol, &h, &super::Isolation::decide(&pol, &h)));
}

#[test]
fn landlock_step_matches_the_layers() {
    use crate::policy::LandlockMode::*;
    for (abi, mode, want) in [
        (7, BestEffort, Some(true)),
        (5, BestEffort, Some(false)),
        (0, BestEffort, None),
        (7, Off, None),
    ] {
        let (pol, _) = layers_with(abi, mode);
        let mut h = host(MountApi::New);
        h.landlock_abi = abi;
        let got = build(&pol, &h).steps.iter().find_map(|s| match s {
            Step::Landlock(Landlock { scoped, .. }) => Some(*scoped),
            _ => None,
        });
        assert_eq!(got, want, "abi {abi} {mode}");
        assert!(
            build(&pol, &h)
                .steps
                .iter()
                .any(|s| matches!(s, Step::Seccomp(p) if p.warden))
        );
    }
}

/// Every host socket in view is masked, in writable roots too, but those
/// allowed by name.
#[test]
fn host_sockets_are_masked_in_roots_too() {
    let mut pol = policy(&["/w"], &[], NetworkMode::Open, TmpMode::Private);
    pol.allowed_sockets = vec![crate::policy::Sourced::new(
        PathBuf::from("/run/allowed.sock"),
        "--allow-socket",
    )];
    let mut h = host(MountApi::New);
    h.unix_sockets.paths = [
        "/run/docker.sock",
        "/w/dev.sock",
        "/tmp/.X11-unix/X0",
        "/dev/log",
        "/run/allowed.sock",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let l = assess(&pol, &h, &super::Isolation::decide(&pol, &h));
    assert_eq!(
        l.masked_sockets,
        vec![PathBuf::from("/run/docker.sock"), PathBuf::from("/w/dev.sock")]
    );
    assert_eq!(l.reachable_sockets, vec![PathBuf::from("/run/allowed.sock")]);
    for api in [MountApi::New, MountApi::Legacy] {
        h.mount_api = api;
        let text = build(&pol, &h).to_string();
        let root = if api == MountApi::New { "" } else { LEGACY_NEW_ROOT };
        assert!(text.contains(&format!("\"{root}/run/docker.sock\"")), "{text}");
        assert!(text.contains(&format!("\"{root}/w/dev.sock\"")), "{text}");
        assert!(!text.contains("allowed.sock"), "{text}");
    }
    // With the host's /tmp, the X11 socket lies in a writable root: masked
    // all the same.
    pol.settings.tmp = crate::policy::Sourced::new(TmpMode::Host, "test");
    pol.writable_roots.push(WritableRoot {
        path: "/tmp".into(),
        reason: RootReason::Temp,
        source: "test".into(),
        cache: None,
    });
    assert!(
        assess(&pol, &h, &super::Isolation::decide(&pol, &h))
            .masked_sockets
            .contains(&PathBuf::from("/tmp/.X11-unix/X0"))
    );
}

#[test]
fn protected_dirs_are_created_first_and_new_session_last() {
    let mut pol = policy(&["/w"], &["/w/.git/hooks"], NetworkMode::Open, TmpMode::Private);
    pol.create_before = vec!["/w/.git/hooks".into()];
    pol.new_session = true;
    let p = build(&pol, &host(MountApi::New));
    assert_eq!(
        p.steps[0],
        Step::CreateHostDir(CreateHostDir {
            path: "/w/.git/hooks".into()
        })
    );
    assert_eq!(
        p.steps[1],
        Step::StartWarden(crate::plan::StartWarden {
            keep_background: false,
            egress: None,
            git: vec![],
            scoped: true,
            notes: true,
            remove: None,
            writable: vec![],
            watch: vec![],
            review: None,
            explain: None,
            limits: None,
            repos: Some(Box::new(crate::plan::RepoScan {
                roots: vec!["/w".into()],
                known: vec![],
                lfs: vec![],
                absent: vec![],
                trusted: vec![],
                ways: vec![],
                cut: false,
            })),
        })
    );
    assert_eq!(
        p.steps[2],
        Step::Unshare(Unshare {
            ns: Namespaces {
                user: true,
                net: false,
                ipc: true,
                ..Namespaces::default()
            }
        })
    );
    assert_eq!(p.steps[p.steps.len() - 2], Step::NewSession);
}

#[test]
fn inherited_descriptors_are_reopened_and_sealed() {
    use crate::host::{FdKind, InheritedFd};
    let mut h = host(MountApi::New);
    h.fds = vec![
        InheritedFd::new(0, FdKind::CharDevice, "/dev/pts/4"),
        InheritedFd::new(3, FdKind::Directory, "/home/u"),
    ];
    let p = build(
        &policy(&["/home/u/proj"], &[], NetworkMode::Open, TmpMode::Private),
        &h,
    );
    let slave = position(&p, |s| matches!(s, Step::MakeMountsSlave));
    let bind = position(
        &p,
        |s| matches!(s, Step::BindMount(BindMount { target, role: Role::InheritedDevice, .. }) if target == Path::new("/dev/pts/4")),
    );
    let reopen = position(&p, |s| matches!(s, Step::ReopenFd(ReopenFd { fd: 0, .. })));
    let dev = position(
        &p,
        |s| matches!(s, Step::MountTmpfs(MountTmpfs { target, .. }) if target == Path::new("/dev")),
    );
    assert!(slave < bind && bind < reopen && reopen < dev);
    let seal = p
        .steps
        .iter()
        .find(|s| matches!(s, Step::SealFds(SealFds { .. })))
        .unwrap();
    assert!(seal.to_string().contains("3 (directory /home/u)"), "{seal}");
}

#[test]
fn the_callers_pty_is_shown_at_its_own_name_after_claiming_it() {
    use crate::host::{FdKind, InheritedFd};
    for api in [MountApi::New, MountApi::Legacy] {
        let mut h = host(api);
        h.fds = vec![InheritedFd::new(0, FdKind::Terminal, "/dev/pts/4")];
        let p = build(
            &policy(&["/home/u/proj"], &[], NetworkMode::Open, TmpMode::Private),
            &h,
        );
        let devpts = position(&p, |s| matches!(s, Step::MountDevpts(MountDevpts { .. })));
        let claim = position(
            &p,
            |s| matches!(s, Step::ClaimPty(ClaimPty { target, index: 4 }) if target.ends_with("dev/pts/4")),
        );
        let shown =
            p.steps
                .iter()
                .rposition(|s| match s {
                    Step::AttachTree(AttachTree { target, .. })
                    | Step::BindMount(BindMount { target, .. }) => target.ends_with("dev/pts/4"),
                    _ => false,
                })
                .unwrap();
        assert!(devpts < claim && claim < shown, "{api:?}: {p}");
        // No mount point is made for it: the claim makes the name.
        assert!(!p.steps.iter().any(
            |s| matches!(s, Step::MakeMountPoint(MakeMountPoint { path, .. }) if path.ends_with("dev/pts/4"))
        ));
    }
}

#[test]
fn the_warden_takes_signals_where_landlock_cannot_scope_them() {
    let pol = policy(&["/w"], &[], NetworkMode::Open, TmpMode::Private);
    for (abi, signals) in [(7, false), (6, false), (5, true), (0, true)] {
        let mut h = host(MountApi::New);
        h.landlock_abi = abi;
        let p = build(&pol, &h);
        assert!(
            p.steps
                .iter()
                .any(|s| matches!(s, Step::Seccomp(p) if p.warden && p.unscoped == signals)),
            "ABI {abi}"
        );
        assert!(matches!(p.steps[0], Step::StartWarden(_)));
    }
}
