//! Sample steps for the recording-fake test: every Step variant, in the
//! orders the planners emit them (run mode, the legacy path, bwrap mode,
//! joining namespaces).

use crate::plan::filter_rules::Profile;
use crate::plan::{
    AttachHidden, AttachTree, BindMount, BlockOnFd, CallerSeccomp, Chdir, Chmod, ClaimPty, CloneMonitor,
    CloneTree, CopyFdToFile, CreateHostDir, DropCapabilities, EnterRoot, Exec, ForkIntoPidNamespace,
    HandGitDirs, HomeCaches, JoinCgroup, JoinNamespace, Landlock, LandlockOnlyFilter, LandlockScopes,
    ListenEgress, LockFile, MakeCgroup, MakeHiddenSource, MakeMountPoint, MakeOverlay, MakePrivateDir,
    MakeTreePrivate, MountDevpts, MountMqueue, MountProc, MountTmpfs, NestUserNamespace, PidOneInit,
    PivotRoot, PrepareCaches, PrepareReview, ReadOnlyInPlace, Remount, RemountTree, ReopenFd, SealFds,
    SeccompToMonitor, SetHostname, SetPathAttr, SetTreeAttr, Symlink, Unshare, WriteHostFile, WriteIdMap,
};
use crate::plan::{Egress, Flags, IdMap, LimitWatch, Namespaces, OverlayUpper, Role, StartWarden, Step};
use crate::policy::EnvRules;
use std::path::PathBuf;

pub(super) fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

const RW: Flags = Flags {
    rdonly: false,
    nosuid: true,
    nodev: true,
    noexec: false,
};
const RO: Flags = Flags {
    rdonly: true,
    nosuid: true,
    nodev: true,
    noexec: false,
};

fn env() -> EnvRules {
    EnvRules {
        clear: false,
        unset: vec![],
        set: vec![],
    }
}

/// `qwrap run`'s kind of steps, in a plausible order: on the host, the
/// namespaces and the mounts, then the command's confinement.
pub(super) fn run_steps() -> Vec<Step> {
    [run_host_steps(), run_mount_steps(), run_confinement_steps()].concat()
}

/// `qwrap run`'s steps on the host, before anything is unshared.
fn run_host_steps() -> Vec<Step> {
    vec![
        Step::CreateHostDir(CreateHostDir { path: p("/q/made") }),
        Step::PrepareCaches(PrepareCaches {
            create: vec![p("/q/cache")],
            layers: vec![p("/q/layer")],
            marked: vec![p("/q/layer/overlaid")],
            lock: Some(p("/q/slot.lock")),
        }),
        Step::PrepareReview(PrepareReview {
            layer: p("/q/state/reviews/ws-0011/3"),
            trees: 2,
            fresh: true,
            bases: vec![p("/q/ws/.git/index")],
            record: b"qwrap-review\t1\0".to_vec(),
        }),
        Step::PrepareReview(PrepareReview {
            layer: p("/q/state/reviews/ws-0011/1"),
            trees: 1,
            fresh: false,
            bases: vec![],
            record: b"qwrap-review\t1\0".to_vec(),
        }),
        Step::WriteHostFile(WriteHostFile {
            path: p("/q/state/rc/bashrc-0011"),
            text: "alias g=git\n".into(),
        }),
        Step::StartWarden(StartWarden {
            keep_background: false,
            egress: Some(Box::new(Egress {
                allow: Default::default(),
                log: Some(p("/q/egress.log")),
                say: true,
            })),
            git: vec![p("/q/ws/.git")],
            scoped: true,
            notes: true,
            remove: None,
            writable: vec![],
            watch: vec![p("/q/ws/.vscode"), p("/q/ws/.envrc")],
            review: Some(p("/q/state/reviews/ws-0011/3")),
            explain: None,
            limits: Some(LimitWatch {
                groups: vec![p("/q/cg/memory/qwrap-42")],
                v2: false,
                memory: None,
                processes: None,
                time_ms: Some(90_000),
                say: true,
            }),
            repos: None,
        }),
        Step::MakeCgroup(MakeCgroup {
            dir: p("/q/cg/memory/qwrap-42"),
            limits: vec![("memory.limit_in_bytes".into(), "67108864".into())],
        }),
        Step::JoinCgroup(JoinCgroup {
            groups: vec![p("/q/cg/memory/qwrap-42/sandbox")],
        }),
    ]
}

/// `qwrap run`'s namespaces and mounts.
fn run_mount_steps() -> Vec<Step> {
    let all = Namespaces {
        user: true,
        net: true,
        ipc: true,
        ..Default::default()
    };
    vec![
        Step::Unshare(Unshare { ns: all }),
        Step::DenySetgroups,
        Step::WriteIdMap(WriteIdMap {
            map: IdMap::Uid,
            inside: 1000,
            outside: 1000,
        }),
        Step::WriteIdMap(WriteIdMap {
            map: IdMap::Gid,
            inside: 1000,
            outside: 1000,
        }),
        Step::LoopbackUp,
        Step::ListenEgress(ListenEgress { port: 3128 }),
        Step::MakeMountsSlave,
        Step::CloneTree(CloneTree {
            tree: 0,
            role: Role::HostRoot,
            source: p("/"),
            recursive: true,
        }),
        Step::SetTreeAttr(SetTreeAttr {
            tree: 0,
            set: RO,
            private: false,
        }),
        Step::CloneTree(CloneTree {
            tree: 1,
            role: Role::WritableRoot,
            source: p("/q/ws"),
            recursive: true,
        }),
        Step::SetTreeAttr(SetTreeAttr {
            tree: 1,
            set: RW,
            private: true,
        }),
        Step::MakeHiddenSource(MakeHiddenSource { tree: 2 }),
        Step::MakeOverlay(MakeOverlay {
            tree: 3,
            lower: vec![p("/q/home/.cache")],
            upper: OverlayUpper::Dirs {
                upper: p("/q/layer/upper"),
                work: p("/q/layer/work"),
            },
            userxattr: true,
        }),
        Step::HomeCaches(HomeCaches {
            home: p("/q/home"),
            upper: p("/q/home-layer/upper"),
            work: p("/q/home-layer/work"),
            userxattr: true,
            parts: vec![crate::plan::OverlayPart {
                tree: 4,
                path: p("/q/home/.npm"),
            }],
        }),
        Step::MountTmpfs(MountTmpfs {
            target: p("/tmp"),
            flags: RW,
            mode: 0o1777,
            size: Some(1 << 20),
        }),
        Step::MakeMountPoint(MakeMountPoint {
            path: p("/dev/pts"),
            dir: true,
            mode: 0o755,
            if_missing: false,
        }),
        Step::MakeMountPoint(MakeMountPoint {
            path: p("/dev/null"),
            dir: false,
            mode: 0o444,
            if_missing: false,
        }),
        Step::Symlink(Symlink {
            target: p("pts/ptmx"),
            link: p("/dev/ptmx"),
        }),
        Step::MountDevpts(MountDevpts {
            target: p("/dev/pts"),
        }),
        Step::ClaimPty(ClaimPty {
            target: p("/dev/pts/0"),
            index: 0,
        }),
        Step::AttachTree(AttachTree {
            tree: 1,
            role: Role::WritableRoot,
            target: p("/q/ws"),
        }),
        Step::AttachHidden(AttachHidden {
            source: 2,
            dir: false,
            target: p("/q/home/.ssh/id_ed25519"),
        }),
        Step::AttachTree(AttachTree {
            tree: 3,
            role: Role::WritableRoot,
            target: p("/q/home/.cache"),
        }),
        Step::SetPathAttr(SetPathAttr {
            target: p("/dev"),
            recursive: false,
            set: RO,
            private: false,
        }),
    ]
}

/// `qwrap run`'s inherited descriptors reopened, and the command's
/// confinement, once its root is in place.
fn run_confinement_steps() -> Vec<Step> {
    vec![
        Step::ReopenFd(ReopenFd {
            fd: 0,
            path: p("/dev/null"),
        }),
        Step::Chdir(Chdir {
            candidates: vec![p("/q/ws")],
        }),
        Step::LockFile(LockFile {
            path: p("/q/ws/.git/index.lock"),
        }),
        Step::DropCapabilities(DropCapabilities {
            keep: vec![],
            bounding: true,
            ambient: crate::plan::Ambient::Lower,
        }),
        Step::NoNewPrivs,
        Step::SealFds(SealFds {
            keep: vec![0, 1, 2],
            closed: vec![],
        }),
        Step::HandGitDirs(HandGitDirs {
            dirs: vec![p("/q/ws/.git")],
        }),
        Step::StartReaper,
        Step::Landlock(Landlock {
            abi: 7,
            paths: vec![p("/q/ws"), p("/tmp")],
            fifo: vec![p("/tmp")],
            scoped: true,
        }),
        Step::Seccomp(profile(true, true, false, false)),
        Step::RefuseKeyrings,
        Step::DieWithParent,
        Step::NewSession {},
        Step::StayInit,
        Step::DetachTerminal,
        Step::Exec(Exec {
            argv: vec!["true".into()],
            argv0: None,
            env: env(),
        }),
    ]
}

/// The legacy mount path's steps.
pub(super) fn legacy_steps() -> Vec<Step> {
    vec![
        Step::BindMount(BindMount {
            role: Role::WritableRoot,
            source: p("/q/ws"),
            target: p("/q/newroot/q/ws"),
            recursive: true,
        }),
        Step::MakeTreePrivate(MakeTreePrivate {
            target: p("/q/newroot"),
        }),
        Step::RemountTree(RemountTree {
            target: p("/q/newroot"),
            source: p("/q/oldroot"),
            table: p("/proc/self/mountinfo"),
            set: RO,
            recursive: true,
        }),
        Step::RemountTree(RemountTree {
            target: p("/q/newroot/x"),
            source: p("/q/newroot/x"),
            table: p("/proc/self/mountinfo"),
            set: RO,
            recursive: false,
        }),
        Step::ReadOnlyInPlace(ReadOnlyInPlace {
            path: p("/q/newroot/proc/sys"),
            legacy: true,
            bubblewrap: false,
        }),
        Step::Remount(Remount {
            target: p("/q/newroot/dev"),
            flags: RO,
        }),
        Step::PivotRoot(PivotRoot {
            new_root: p("/q/newroot"),
            put_old: p("/q/newroot/.old"),
        }),
        Step::Seccomp(Profile::PLAIN),
    ]
}

/// bwrap mode's kind of steps, under a new root.
pub(super) fn bwrap_steps() -> Vec<Step> {
    let ns = Namespaces {
        user: true,
        pid: true,
        uts: true,
        ..Default::default()
    };
    vec![
        Step::DieWithParent,
        Step::CloneMonitor(CloneMonitor {
            ns,
            info_fd: Some(7),
            json_status_fd: Some(8),
            join: false,
            forward_signals: false,
            explain: Some(Box::new(crate::plan::explain::bwrap_orders(true, false))),
        }),
        Step::SetHostname(SetHostname { name: "box".into() }),
        Step::MakeMountPoint(MakeMountPoint {
            path: p("/q/newroot/etc"),
            dir: true,
            mode: 0o755,
            if_missing: true,
        }),
        Step::MountProc(MountProc {
            target: p("/q/newroot/proc"),
        }),
        Step::MountMqueue(MountMqueue {
            target: p("/q/newroot/dev/mqueue"),
        }),
        Step::CopyFdToFile(CopyFdToFile {
            fd: 9,
            path: p("/q/newroot/etc/passwd"),
            mode: 0o644,
        }),
        Step::Chmod(Chmod {
            path: p("/q/newroot/etc/passwd"),
            mode: 0o600,
        }),
        Step::ReadOnlyInPlace(ReadOnlyInPlace {
            path: p("/q/newroot/etc"),
            legacy: false,
            bubblewrap: false,
        }),
        Step::EnterRoot(EnterRoot {
            new_root: p("/q/newroot"),
        }),
        Step::DropCapabilities(DropCapabilities {
            keep: vec![0, 21],
            bounding: false,
            ambient: crate::plan::Ambient::Offer,
        }),
        Step::DropCapabilities(DropCapabilities {
            keep: vec![0],
            bounding: true,
            ambient: crate::plan::Ambient::Raise,
        }),
        Step::DisableUserns,
        Step::NestUserNamespace(NestUserNamespace { uid: 0, gid: 0 }),
        Step::AssertUsernsDisabled,
        Step::BlockOnFd(BlockOnFd { fd: 10 }),
        Step::SeccompToMonitor(SeccompToMonitor { layers: true }),
        Step::CallerSeccomp(CallerSeccomp {
            programs: vec![vec![0u8; 8]],
        }),
        Step::PidOneInit(PidOneInit {
            forward_signals: false,
            wait_all: false,
        }),
        Step::Exec(Exec {
            argv: vec!["true".into()],
            argv0: Some("sh".into()),
            env: env(),
        }),
    ]
}

/// Joining a caller's namespaces (`--userns FD`), with and without a PID
/// namespace; a monitor that reports without joining.
pub(super) fn join_steps() -> Vec<Vec<Step>> {
    let monitor = |join: bool, info_fd: Option<i32>| {
        Step::CloneMonitor(CloneMonitor {
            ns: Namespaces {
                user: true,
                ..Default::default()
            },
            info_fd,
            json_status_fd: None,
            join,
            forward_signals: false,
            explain: None,
        })
    };
    vec![
        vec![
            monitor(true, None),
            Step::JoinNamespace(JoinNamespace { fd: 11, pid: false }),
            Step::NotifyMonitor,
        ],
        vec![
            Step::DieWithParent,
            monitor(true, Some(7)),
            Step::JoinNamespace(JoinNamespace { fd: 11, pid: false }),
            Step::JoinNamespace(JoinNamespace { fd: 12, pid: true }),
            Step::ForkIntoPidNamespace(ForkIntoPidNamespace { new_pidns: false }),
        ],
        vec![
            monitor(true, None),
            Step::JoinNamespace(JoinNamespace { fd: 11, pid: false }),
            Step::ForkIntoPidNamespace(ForkIntoPidNamespace { new_pidns: true }),
        ],
        vec![monitor(false, Some(7))],
        // run --pid private: the monitor relays signals, PID 1 is the
        // warden's to watch.
        vec![
            Step::StartWarden(StartWarden {
                keep_background: false,
                egress: None,
                git: vec![],
                scoped: true,
                notes: false,
                remove: None,
                writable: vec![],
                watch: vec![],
                review: None,
                explain: None,
                limits: Some(LimitWatch {
                    groups: vec![p("/q/cg/qwrap-42")],
                    v2: true,
                    memory: None,
                    processes: None,
                    time_ms: Some(1500),
                    say: false,
                }),
                repos: None,
            }),
            Step::CloneMonitor(CloneMonitor {
                ns: Namespaces {
                    user: true,
                    pid: true,
                    ..Default::default()
                },
                info_fd: None,
                json_status_fd: None,
                join: false,
                forward_signals: true,
                explain: None,
            }),
            Step::JoinCgroup(JoinCgroup {
                groups: vec![p("/q/cg/qwrap-42/sandbox")],
            }),
            Step::LandlockScopes(LandlockScopes { abi: 7 }),
            Step::Seccomp(profile(false, true, true, false)),
            Step::HandInit,
            Step::PidOneInit(PidOneInit {
                forward_signals: true,
                wait_all: true,
            }),
        ],
        // --isolation landlock: no namespaces, no mounts.
        vec![
            Step::MakePrivateDir(MakePrivateDir {
                path: p("/tmp/qwrap-1000-42"),
            }),
            Step::StartWarden(StartWarden {
                keep_background: false,
                egress: None,
                git: vec![],
                scoped: true,
                notes: false,
                remove: Some(p("/tmp/qwrap-1000-42")),
                writable: vec![p("/home/u/ws/src"), p("/tmp/qwrap-1000-42")],
                watch: vec![],
                review: None,
                explain: None,
                limits: None,
                repos: None,
            }),
            Step::LandlockAllowList(crate::plan::AllowRules {
                abi: 7,
                read: vec![p("/usr"), p("/home/u/ws")],
                list: vec![p("/"), p("/home/u")],
                write: vec![p("/home/u/ws/src"), p("/tmp/qwrap-1000-42")],
                fifo: vec![p("/tmp/qwrap-1000-42")],
                write_files: vec![p("/dev/null")],
                scoped: true,
                no_tcp: true,
            }),
            Step::Seccomp(profile(true, false, false, true)),
            Step::LandlockOnlyFilter(LandlockOnlyFilter { closed: true }),
        ],
    ]
}

/// A seccomp profile without `--explain`.
fn profile(warden: bool, unscoped: bool, root: bool, landlock_only: bool) -> Profile {
    Profile {
        warden,
        unscoped,
        root,
        landlock_only,
        explain: false,
    }
}
