use super::filter_rules::Profile;
use super::*;
use crate::plan::{
    AttachTree, BindMount, Chdir, CloneTree, DropCapabilities, EnterRoot, Exec, Landlock, MakeMountPoint,
    MakeTreePrivate, MountTmpfs, PivotRoot, Remount, RemountTree, SealFds, SetPathAttr, SetTreeAttr, Symlink,
    Unshare, WriteIdMap,
};
use crate::policy::NetworkMode;
use crate::policy::{
    Checkout, CliSettings, EnvRules, GitInfo, ReadOnlyPath, RootReason, Settings, TmpMode, WritableRoot,
};
use std::ffi::OsString;

/// The plan, for a policy and host that the tests expect to be accepted.
fn build(policy: &Policy, host: &HostFacts) -> Plan {
    super::build(policy, host).expect("accepted").0
}

pub(super) fn policy(roots: &[&str], ro: &[&str], net: NetworkMode, tmp: TmpMode) -> Policy {
    Policy {
        workspace: PathBuf::from(roots[0]),
        writable_roots: roots
            .iter()
            .map(|r| WritableRoot {
                path: r.into(),
                reason: RootReason::Workspace,
                source: "test".into(),
                cache: None,
            })
            .collect(),
        read_only: ro
            .iter()
            .map(|p| ReadOnlyPath {
                path: p.into(),
                within: roots[0].into(),
                source: "test".into(),
            })
            .collect(),
        dropped: vec![],
        git: GitInfo {
            checkout: Checkout::None,
            top: None,
            roots: vec![],
            note: None,
        },
        settings: {
            let mut s = Settings::load(&CliSettings::default(), &|_| None, &[]).unwrap();
            s.network = crate::policy::Sourced::new(net, "test");
            s.tmp = crate::policy::Sourced::new(tmp, "test");
            s
        },
        home: None,
        die_with_parent: true,
        new_session: false,
        protected: vec![],
        create_before: vec![],
        pinned: vec![],
        git_layouts: vec![],
        repos: Default::default(),
        redacted_rc: vec![],
        tmp_sockets: vec![],
        user_env_names: vec![],
        quiet: false,
        denials: None,
        keep_fds: vec![],
        socket_vars: vec![],
        hidden: vec![],
        shown: vec![],
        view_entries: vec![],
        home_listing: None,
        cache_set: None,
        profiles: vec![],
        allowed_domains: vec![],
        egress_log: None,
        removed_variables: vec![],
        allowed_sockets: vec![],
        env: EnvRules::build(tmp, &[], &[]),
        command: vec![OsString::from("true")],
        review: None,
        watched: vec![],
    }
}

pub(super) fn host(api: MountApi) -> HostFacts {
    HostFacts {
        mount_api: api,
        mount_api_reason: "test",
        uid: 1000,
        gid: 100,
        landlock_abi: 7,
        landlock_abi_capped: false,
        unix_sockets: Default::default(),
        fds: vec![],
        caches: crate::host::caches::CacheFacts::none(),
        mem_total: 8 << 30,
        no_pty: None,
        ctty: crate::host::Ctty::None,
        pid_one: false,
        landlock_only: Default::default(),
        review: None,
        kernel: (6, 18),
        cgroups: None,
    }
}

fn default_plan(api: MountApi) -> Plan {
    build(
        &policy(&["/home/u/proj"], &[], NetworkMode::Open, TmpMode::Private),
        &host(api),
    )
}

fn position(plan: &Plan, pred: impl Fn(&Step) -> bool) -> usize {
    plan.steps.iter().position(pred).expect("step present")
}

#[test]
fn starts_with_namespaces_and_identity_maps() {
    let p = default_plan(MountApi::New);
    assert_eq!(
        &p.steps[..6],
        &[
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
                    roots: vec!["/home/u/proj".into()],
                    known: vec![],
                    lfs: vec![],
                    absent: vec![],
                    trusted: vec![],
                    ways: vec![],
                    cut: false,
                })),
            }),
            Step::Unshare(Unshare {
                ns: Namespaces {
                    user: true,
                    net: false,
                    ipc: true,
                    ..Namespaces::default()
                }
            }),
            Step::DenySetgroups,
            Step::WriteIdMap(WriteIdMap {
                map: IdMap::Uid,
                inside: 1000,
                outside: 1000
            }),
            Step::WriteIdMap(WriteIdMap {
                map: IdMap::Gid,
                inside: 100,
                outside: 100
            }),
            Step::MakeMountsSlave,
        ]
    );
    assert_eq!(
        p.steps[3].to_string(),
        r#"openat("/proc/self/uid_map", O_WRONLY); write("1000 1000 1")"#
    );
}

#[test]
fn ends_by_dropping_privileges_then_exec() {
    for api in [MountApi::New, MountApi::Legacy] {
        let p = default_plan(api);
        let n = p.steps.len();
        // Only the legacy path pivots; the new API edits its own copy in place.
        assert_eq!(
            matches!(p.steps[n - 11], Step::EnterRoot(EnterRoot { .. })),
            api == MountApi::Legacy
        );
        assert!(
            !p.steps[..n - 11]
                .iter()
                .any(|s| matches!(s, Step::EnterRoot(EnterRoot { .. })))
        );
        assert_eq!(
            p.steps[n - 10],
            Step::Chdir(Chdir {
                candidates: vec!["/home/u/proj".into()]
            })
        );
        assert_eq!(
            &p.steps[n - 9..n - 6],
            &[
                Step::DropCapabilities(DropCapabilities {
                    keep: vec![],
                    bounding: true,
                    ambient: Ambient::Lower
                }),
                Step::NoNewPrivs,
                Step::SealFds(SealFds {
                    keep: vec![],
                    closed: vec![]
                })
            ]
        );
        assert_eq!(p.steps[n - 6], Step::StartReaper);
        assert_eq!(
            p.steps[n - 5],
            Step::Landlock(Landlock {
                abi: 7,
                paths: vec!["/home/u/proj".into(), "/dev".into(), "/tmp".into()],
                fifo: vec!["/dev".into(), "/tmp".into()],
                scoped: true
            })
        );
        assert_eq!(
            &p.steps[n - 4..n - 1],
            &[
                Step::Seccomp(Profile {
                    warden: true,
                    unscoped: false,
                    root: false,
                    landlock_only: false,
                    explain: false,
                }),
                Step::RefuseKeyrings,
                Step::DieWithParent
            ]
        );
        assert!(matches!(p.steps[n - 1], Step::Exec(Exec { .. })));
    }
}

#[test]
fn closed_network_unshares_net_and_raises_lo() {
    let p = build(
        &policy(&["/w"], &[], NetworkMode::Closed, TmpMode::Private),
        &host(MountApi::New),
    );
    assert_eq!(
        p.steps[1],
        Step::Unshare(Unshare {
            ns: Namespaces {
                user: true,
                net: true,
                ipc: true,
                ..Namespaces::default()
            }
        })
    );
    assert_eq!(
        p.steps[1].to_string(),
        "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWNET|CLONE_NEWIPC)"
    );
    assert!(p.steps.contains(&Step::LoopbackUp));
    assert!(!default_plan(MountApi::New).steps.contains(&Step::LoopbackUp));
}

#[test]
fn new_api_clones_everything_before_mounting_over_host_paths() {
    let p = build(
        &policy(
            &["/tmp/ws", "/srv/x"],
            &["/tmp/ws/.env"],
            NetworkMode::Open,
            TmpMode::Private,
        ),
        &host(MountApi::New),
    );
    let first_mount = position(&p, |s| {
        matches!(
            s,
            Step::MountTmpfs(MountTmpfs { .. })
                | Step::AttachTree(AttachTree { .. })
                | Step::SetPathAttr(SetPathAttr { .. })
        )
    });
    let last_clone = p
        .steps
        .iter()
        .rposition(|s| {
            matches!(
                s,
                Step::CloneTree(CloneTree { .. }) | Step::SetTreeAttr(SetTreeAttr { .. })
            )
        })
        .unwrap();
    assert_eq!(last_clone + 1, first_mount);
    // Then the whole tree is made read-only, nosuid and private, recursively,
    // in one call; only after that is anything mounted.
    assert_eq!(
        p.steps[first_mount].to_string(),
        r#"mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, {attr_set=MOUNT_ATTR_RDONLY|MOUNT_ATTR_NOSUID, propagation=MS_PRIVATE})"#
    );
    assert!(!p.steps.iter().any(|s| matches!(
        s,
        Step::EnterRoot(EnterRoot { .. }) | Step::PivotRoot(PivotRoot { .. })
    )));
    assert!(!p.steps.iter().any(|s| matches!(
        s,
        Step::BindMount(BindMount { .. }) | Step::RemountTree(RemountTree { .. })
    )));
}

#[test]
fn every_tree_is_cloned_once_and_attached_once() {
    let p = build(
        &policy(
            &["/w", "/srv/x"],
            &["/w/.git/hooks"],
            NetworkMode::Open,
            TmpMode::Private,
        ),
        &host(MountApi::New),
    );
    let n = p.tree_count();
    // The host tree itself is not cloned: the namespace's copy is the root.
    assert_eq!(n, DEVICES.len() + 2 + 1);
    for id in 0..n {
        let cloned = position(
            &p,
            |s| matches!(s, Step::CloneTree(CloneTree { tree, .. }) if *tree == id),
        );
        let attached: Vec<usize> = p
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Step::AttachTree(AttachTree { tree, .. }) if *tree == id))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(attached.len(), 1, "tree{id}");
        assert!(cloned < attached[0]);
    }
}

#[test]
fn parents_are_mounted_before_children() {
    let p = build(
        &policy(
            &["/w", "/w2/deep/er"],
            &["/w/a/b", "/w/a"],
            NetworkMode::Open,
            TmpMode::Private,
        ),
        &host(MountApi::New),
    );
    let targets: Vec<&PathBuf> = p
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::AttachTree(AttachTree { target, .. }) | Step::MountTmpfs(MountTmpfs { target, .. }) => {
                Some(target)
            }
            _ => None,
        })
        .collect();
    for (i, t) in targets.iter().enumerate() {
        for later in &targets[i + 1..] {
            assert!(
                !t.starts_with(later) || t == later,
                "{t:?} mounted before its parent {later:?}"
            );
        }
    }
}

#[test]
fn roots_under_private_tmp_get_mount_points() {
    let p = build(
        &policy(&["/tmp/a/ws"], &[], NetworkMode::Open, TmpMode::Private),
        &host(MountApi::New),
    );
    let tmpfs = position(
        &p,
        |s| matches!(s, Step::MountTmpfs(MountTmpfs { target, .. }) if target == Path::new("/tmp")),
    );
    let mk_a = position(
        &p,
        |s| matches!(s, Step::MakeMountPoint(MakeMountPoint { path, dir: true, .. }) if path == Path::new("/tmp/a")),
    );
    // /tmp/a is the host's, read-only: a write beside the root must not
    // land in the throwaway tmpfs.
    let attach_a = position(
        &p,
        |s| matches!(s, Step::AttachTree(AttachTree { target, role: Role::ReadOnlyPath, .. }) if target == Path::new("/tmp/a")),
    );
    let attach = position(
        &p,
        |s| matches!(s, Step::AttachTree(AttachTree { target, .. }) if target == Path::new("/tmp/a/ws")),
    );
    assert!(tmpfs < mk_a && mk_a < attach_a && attach_a < attach);
    assert!(!p.steps.iter().any(
        |s| matches!(s, Step::MakeMountPoint(MakeMountPoint { path, dir: true, .. }) if path == Path::new("/tmp/a/ws"))
    ));
    // With the host's /tmp there is nothing to create.
    let p = build(
        &policy(&["/tmp/a/ws"], &[], NetworkMode::Open, TmpMode::Host),
        &host(MountApi::New),
    );
    assert!(
        !p.steps
            .iter()
            .any(|s| matches!(s, Step::MakeMountPoint(MakeMountPoint { path, dir: true, .. }) if path.starts_with("/tmp")))
    );
    assert!(
        !p.steps
            .iter()
            .any(|s| matches!(s, Step::MountTmpfs(MountTmpfs { target, .. }) if target == Path::new("/tmp")))
    );
}

#[test]
fn dev_is_exactly_the_minimal_set_then_read_only() {
    for api in [MountApi::New, MountApi::Legacy] {
        let p = default_plan(api);
        let root = if api == MountApi::New {
            "/"
        } else {
            LEGACY_NEW_ROOT
        };
        let dev = Path::new(root).join("dev");
        let mut entries: Vec<String> = p
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::MakeMountPoint(MakeMountPoint { path, .. })
                | Step::Symlink(Symlink { link: path, .. }) => Some(path),
                _ => None,
            })
            .filter(|p| p.parent() == Some(&dev))
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        entries.sort();
        assert_eq!(
            entries,
            [
                "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty",
                "urandom", "zero"
            ]
        );
        let ro = position(&p, |s| match s {
            Step::SetPathAttr(SetPathAttr { target, .. }) | Step::Remount(Remount { target, .. }) => {
                target == &dev
            }
            _ => false,
        });
        let last_dev = p
            .steps
            .iter()
            .rposition(|s| s.to_string().contains(&format!("{}/", dev.display())))
            .unwrap();
        assert!(ro > last_dev, "{api}: /dev made read-only before it was filled");
    }
}

#[test]
fn legacy_path_binds_from_old_root_and_remounts_once_per_tree() {
    let p = build(
        &policy(&["/w"], &["/w/.env"], NetworkMode::Open, TmpMode::Private),
        &host(MountApi::Legacy),
    );
    assert!(!p.steps.iter().any(|s| matches!(
        s,
        Step::CloneTree(CloneTree { .. }) | Step::AttachTree(AttachTree { .. })
    )));
    let text = p.to_string();
    assert!(
        text.contains(r#"pivot_root("/tmp", "/tmp/oldroot"); chdir("/")"#),
        "{text}"
    );
    assert!(text.contains(r#"mount("/oldroot", "/newroot", NULL, MS_BIND|MS_REC, NULL)"#));
    assert!(text.contains(r#"mount("/oldroot/w", "/newroot/w", NULL, MS_BIND|MS_REC, NULL)"#));
    assert!(text.contains(r#"mount("/oldroot/dev/null", "/newroot/dev/null", NULL, MS_BIND, NULL)"#));
    let remounts: Vec<&Step> = p
        .steps
        .iter()
        .filter(|s| matches!(s, Step::RemountTree(RemountTree { .. })))
        .collect();
    // The host tree and the read-only path (device nodes get a Remount).
    assert_eq!(remounts.len(), 2);
    assert!(
        remounts[0]
            .to_string()
            .contains(r#""/oldroot/proc/self/mountinfo""#)
    );
    // The host tree is made private before it is remounted.
    let private = position(
        &p,
        |s| matches!(s, Step::MakeTreePrivate(MakeTreePrivate { target }) if target == Path::new("/newroot")),
    );
    let remount = position(
        &p,
        |s| matches!(s, Step::RemountTree(RemountTree { target, .. }) if target == Path::new("/newroot")),
    );
    assert!(private < remount);
    assert!(
        matches!(p.steps.iter().rev().nth(10), Some(Step::EnterRoot(EnterRoot { new_root })) if new_root == Path::new("/newroot"))
    );
}

#[test]
fn no_die_with_parent_drops_the_step() {
    let mut pol = policy(&["/w"], &[], NetworkMode::Open, TmpMode::Private);
    pol.die_with_parent = false;
    assert!(
        !build(&pol, &host(MountApi::New))
            .steps
            .contains(&Step::DieWithParent)
    );
}

#[test]
fn under_joins_absolute_paths() {
    assert_eq!(under(Path::new("/tmp"), Path::new("/")), PathBuf::from("/tmp"));
    assert_eq!(
        under(Path::new("/tmp"), Path::new("/a/b")),
        PathBuf::from("/tmp/a/b")
    );
}

#[path = "tests_layers.rs"]
mod layers;

#[path = "tests_home.rs"]
mod home;
