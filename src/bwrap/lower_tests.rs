//! Unit tests of the bwrap lowering.

use super::*;
use crate::plan::{
    AttachTree, BindMount, CloneMonitor, CloneTree, EnterRoot, Landlock, MountProc, MountTmpfs, PidOneInit,
    PivotRoot, ReadOnlyInPlace, RemountTree, SetPathAttr, SetTreeAttr, WriteIdMap,
};

#[test]
fn usage_lists_the_options_callers_look_for() {
    let u = usage("bwrap");
    for opt in [
        "--as-pid-1",
        "--perms",
        "--disable-userns",
        "--overlay-src",
        "--add-seccomp-fd",
    ] {
        assert!(u.contains(&format!("    {opt} ")), "{opt}");
    }
}

fn ctx(uid: u32) -> Context {
    Context {
        uid,
        gid: uid,
        cwd: Some("/w".into()),
        home: Some("/home/u".into()),
        console: None,
        landlock_abi: 7,
        layers: false,
        landlock: LandlockMode::BestEffort,
        initramfs_root: false,
        mount_api: crate::host::MountApi::New,
        caps_permitted: 0,
        explain: false,
    }
}

fn plan(args: &[&str], uid: u32) -> Plan {
    let c = match args::parse(args.iter().map(OsString::from).collect()).unwrap() {
        Parsed::Run(c) => c,
        other => panic!("{other:?}"),
    };
    lower(&c, &ctx(uid)).unwrap()
}

#[test]
fn env_ops_fold_in_order() {
    let r = env_rules(&[
        EnvOp::Set("A".into(), "1".into()),
        EnvOp::Unset("A".into()),
        EnvOp::Set("B".into(), "2".into()),
    ]);
    assert_eq!(r.unset, vec![OsString::from("A")]);
    assert_eq!(r.set, vec![(OsString::from("B"), OsString::from("2"))]);
    assert!(!r.clear);
    let r = env_rules(&[EnvOp::Set("A".into(), "1".into()), EnvOp::Clear]);
    assert!(r.clear && r.set.is_empty());
}

#[test]
fn root_without_unshare_user_gets_no_user_namespace() {
    let p = plan(&["--ro-bind", "/", "/", "true"], 0);
    assert!(matches!(p.steps[0], Step::CloneMonitor(CloneMonitor { ns, .. }) if !ns.user));
    assert!(!p.steps.contains(&Step::DenySetgroups));
    let p = plan(&["--ro-bind", "/", "/", "true"], 1000);
    assert!(matches!(p.steps[0], Step::CloneMonitor(CloneMonitor { ns, .. }) if ns.user));
    assert!(p.steps.contains(&Step::WriteIdMap(WriteIdMap {
        map: crate::plan::IdMap::Uid,
        inside: 1000,
        outside: 1000
    })));
    let p = plan(
        &["--unshare-user", "--uid", "0", "--ro-bind", "/", "/", "true"],
        1000,
    );
    assert!(p.steps.contains(&Step::WriteIdMap(WriteIdMap {
        map: crate::plan::IdMap::Uid,
        inside: 0,
        outside: 1000
    })));
}

#[test]
fn operations_apply_in_argument_order_after_every_clone() {
    let p = plan(
        &[
            "--ro-bind",
            "/",
            "/",
            "--tmpfs",
            "/tmp",
            "--bind",
            "/tmp",
            "/tmp/x",
            "--dev",
            "/dev",
            "true",
        ],
        1000,
    );
    let text = p.to_string();
    let tmpfs = text.find(r#"mount("tmpfs", "/tmp/newroot/tmp""#).unwrap();
    let bind = text
        .find(r#"move_mount(tree1, "", AT_FDCWD, "/tmp/newroot/tmp/x""#)
        .unwrap();
    let dev = text.find(r#"mount("tmpfs", "/tmp/newroot/dev""#).unwrap();
    assert!(tmpfs < bind && bind < dev, "{text}");
    let last_clone = p
        .steps
        .iter()
        .rposition(|s| matches!(s, Step::CloneTree(CloneTree { .. })))
        .unwrap();
    let staging = p
        .steps
        .iter()
        .position(
            |s| matches!(s, Step::MountTmpfs(MountTmpfs { target, .. }) if target == Path::new(crate::plan::STAGING)),
        )
        .unwrap();
    assert!(last_clone < staging);
}

#[test]
fn die_with_parent_comes_first_and_arms_every_fork() {
    let p = plan(&["--die-with-parent", "--unshare-pid", "true"], 1000);
    assert_eq!(p.steps[0], Step::DieWithParent);
    assert!(matches!(p.steps[1], Step::CloneMonitor(CloneMonitor { .. })));
    assert_eq!(p.steps.iter().filter(|s| **s == Step::DieWithParent).count(), 1);
    let p = plan(&["--unshare-pid", "true"], 1000);
    assert!(!p.steps.contains(&Step::DieWithParent));
}

#[test]
fn pid_namespace_mounts_proc_and_starts_an_init() {
    let p = plan(&["--unshare-pid", "--proc", "/proc", "true"], 1000);
    assert!(
        p.steps
            .iter()
            .any(|s| matches!(s, Step::MountProc(MountProc { .. })))
    );
    assert!(
        p.steps
            .iter()
            .any(|s| matches!(s, Step::PidOneInit(PidOneInit { .. })))
    );
    let p = plan(&["--unshare-pid", "--as-pid-1", "true"], 1000);
    assert!(
        !p.steps
            .iter()
            .any(|s| matches!(s, Step::PidOneInit(PidOneInit { .. })))
    );
    // Without a PID namespace /proc is the host's, bound.
    let p = plan(&["--proc", "/proc", "true"], 1000);
    assert!(
        !p.steps
            .iter()
            .any(|s| matches!(s, Step::MountProc(MountProc { .. })))
    );
    assert!(p.to_string().contains(r#"open_tree(AT_FDCWD, "/proc""#));
}

#[test]
fn missing_sources() {
    let c = match args::parse(
        ["--bind", "/nonexistent/qwrap", "/x", "true"]
            .map(OsString::from)
            .to_vec(),
    )
    .unwrap()
    {
        Parsed::Run(c) => c,
        _ => unreachable!(),
    };
    let e = lower(&c, &ctx(1000)).unwrap_err();
    assert!(matches!(e, LowerError::MissingSource(_)), "{e}");
    assert!(e.to_string().starts_with("Can't find source path /"), "{e}");
    let p = plan(&["--bind-try", "/nonexistent/qwrap", "/x", "true"], 1000);
    assert!(!p.to_string().contains("/nonexistent/qwrap"));
}

#[test]
fn layers_only_when_asked() {
    let p = plan(&["--ro-bind", "/", "/", "true"], 1000);
    assert!(
        !p.steps
            .iter()
            .any(|s| matches!(s, Step::Landlock(Landlock { .. }) | Step::Seccomp(_)))
    );
    let c = match args::parse(["--bind", "/", "/", "true"].map(OsString::from).to_vec()).unwrap() {
        Parsed::Run(c) => c,
        _ => unreachable!(),
    };
    let mut cx = ctx(1000);
    cx.layers = true;
    let p = lower(&c, &cx).unwrap();
    assert!(
        p.steps
            .contains(&Step::Seccomp(crate::plan::filter_rules::Profile::PLAIN))
    );
    assert!(
        p.steps
            .iter()
            .any(|s| matches!(s, Step::Landlock(Landlock { scoped: true, .. })))
    );
}

#[test]
fn the_legacy_path_binds_from_the_old_root_and_never_needs_the_new_api() {
    let c = match args::parse(
        [
            "--ro-bind",
            "/usr",
            "/usr",
            "--bind",
            "/tmp",
            "/work",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--remount-ro",
            "/work",
            "--tmpfs",
            "/t",
            "--unshare-pid",
            "true",
        ]
        .iter()
        .map(OsString::from)
        .collect(),
    )
    .unwrap()
    {
        Parsed::Run(c) => c,
        other => panic!("{other:?}"),
    };
    let mut ctx = ctx(1000);
    ctx.mount_api = crate::host::MountApi::Legacy;
    let p = lower(&c, &ctx).unwrap();
    assert_eq!(p.mount_api, crate::host::MountApi::Legacy);
    assert_eq!(p.new_root.as_deref(), Some(Path::new("/newroot")));
    // No call of the new mount API but the overlays' (none here).
    assert!(!p.steps.iter().any(|s| matches!(
        s,
        Step::CloneTree(CloneTree { .. })
            | Step::SetTreeAttr(SetTreeAttr { .. })
            | Step::SetPathAttr(SetPathAttr { .. })
            | Step::AttachTree(AttachTree { .. })
    )));
    assert!(
        !p.steps
            .iter()
            .any(|s| matches!(s, Step::ReadOnlyInPlace(ReadOnlyInPlace { legacy: false, .. })))
    );
    // The host is under /oldroot once pivoted; binds come from there and
    // keep each copied mount's flags.
    let pivot = p
        .steps
        .iter()
        .position(|s| matches!(s, Step::PivotRoot(PivotRoot { .. })))
        .unwrap();
    let bind = p
        .steps
        .iter()
        .position(|s| matches!(s, Step::BindMount(BindMount { source, target, .. }) if source == Path::new("/oldroot/usr") && target == Path::new("/newroot/usr")))
        .unwrap();
    assert!(pivot < bind);
    assert!(p.steps.iter().any(|s| matches!(s,
        Step::RemountTree(RemountTree { target, source, set, recursive: true, .. })
            if target == Path::new("/newroot/usr") && source == Path::new("/oldroot/usr") && set.rdonly && set.nodev)));
    assert!(p.steps.iter().any(|s| matches!(s,
        Step::RemountTree(RemountTree { target, set, recursive: false, .. }) if target == Path::new("/newroot/work") && set.rdonly)));
    assert!(
        matches!(p.steps.iter().rev().find(|s| matches!(s, Step::EnterRoot(EnterRoot { .. }))),
        Some(Step::EnterRoot(EnterRoot { new_root })) if new_root == Path::new("/newroot"))
    );
}
