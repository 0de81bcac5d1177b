//! The hint under a failed step: what on this host explains the errno.

use crate::host::diagnose;
use crate::plan::Step;
use crate::plan::{
    AttachTree, CloneMonitor, CloneTree, Exec, JoinCgroup, MakeCgroup, MakeMountPoint, MakeOverlay,
    PrepareCaches, PrepareReview, ReadOnlyInPlace, SealFds, SetPathAttr, SetTreeAttr, Unshare, WriteIdMap,
};

pub(super) fn for_step(step: &Step, raw: i32) -> Option<String> {
    match step {
        Step::Unshare(Unshare { ns }) | Step::CloneMonitor(CloneMonitor { ns, join: false, .. }) if ns.user => {
            Some(diagnose::userns_hint(raw))
        }
        Step::Exec(Exec { argv, .. }) => Some(exec_hint(raw, argv.first())),
        Step::DieWithParent => Some("the process that started qwrap exited during setup".into()),
        Step::StartWarden(_) if raw == libc::ENOENT => {
            Some("/proc is not mounted here (or not procfs): qwrap needs /proc/self/stat to fork safely".into())
        }
        Step::StartWarden(_) | Step::StartReaper if raw == libc::EBUSY => {
            Some("this process has more than one thread, and a fork could copy a lock another thread holds".into())
        }
        Step::DenySetgroups | Step::WriteIdMap(WriteIdMap { .. }) if raw == libc::ENOENT => {
            Some("/proc is not mounted here (or not procfs): qwrap needs /proc/self/uid_map".into())
        }
        Step::DenySetgroups | Step::WriteIdMap(WriteIdMap { .. }) if raw == libc::EROFS => Some(
            if std::env::var_os("SANDBOX").is_some_and(|v| v == "qwrap") {
                "/proc is read-only here, inside a qwrap sandbox (SANDBOX=qwrap) of the shared PID mode: \
                 a nested sandbox cannot write its user namespace's id maps there; start the outer one \
                 with `qwrap run --pid private`, where qwrap (either mode), bwrap and Chromium's sandbox \
                 run nested"
                    .into()
            } else {
                "/proc is read-only here, as inside another sandbox (a container, bubblewrap with the \
                 host's /proc): qwrap cannot write its user namespace's id maps; run it outside that sandbox"
                    .into()
            },
        ),
        // Root in a user namespace other than the host's: the kernel maps
        // uid 0 into a nested one only for a creator that had CAP_SETFCAP.
        Step::WriteIdMap(WriteIdMap { outside: 0, .. }) if raw == libc::EPERM && !crate::host::initial_user_namespace() => Some(
            "uid 0 of a user namespace other than the host's (as root in a sandbox) may map itself into a \
             nested one only if it held CAP_SETFCAP, which a sandbox of root's drops (a file capability \
             written through the nested namespace would hold outside): run the outer sandbox as an \
             ordinary user"
                .into(),
        ),
        Step::StartWarden(crate::plan::StartWarden { egress: Some(e), .. }) if e.log.is_some() && raw != libc::ENOSYS => Some(format!(
            "the egress log {} must be a file the caller can open for appending",
            e.log.as_deref().unwrap_or(std::path::Path::new("")).display()
        )),
        Step::PrepareCaches(PrepareCaches { .. }) if raw == libc::EWOULDBLOCK => Some(
            "another sandbox of this workspace took the same cache layer slot meanwhile: run the command again".into(),
        ),
        Step::PrepareCaches(PrepareCaches { .. }) => Some(
            "a cache directory or its layer could not be made on the host: --cache private keeps the caches \
             in a tmpfs, --no-detect leaves out the toolchains' caches"
                .into(),
        ),
        Step::PrepareReview(PrepareReview { .. }) if raw == libc::EEXIST || raw == libc::EWOULDBLOCK => Some(
            "another run of this workspace took the same review layer id meanwhile: run the command again".into(),
        ),
        Step::PrepareReview(PrepareReview { .. }) => Some(
            "the review layer could not be made in qwrap's state directory (${XDG_STATE_HOME:-~/.local/state}/qwrap/reviews)"
                .into(),
        ),
        Step::MakeOverlay(MakeOverlay { lower, .. }) if raw == libc::EINVAL => Some(format!(
            "overlayfs in a user namespace refuses a lower layer with mounts beneath it (it would hide them): is a host mount beneath {}? --review needs the workspace without one; for `qwrap run`'s caches, --cache private uses a tmpfs instead",
            lower.iter().map(|l| l.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
        Step::MakeOverlay(MakeOverlay { .. }) if raw != libc::ENOSYS => Some(
            "overlayfs refused the layers (its words above); for `qwrap run`'s caches, --cache private uses \
             a tmpfs instead"
                .into(),
        ),
        Step::MakeCgroup(MakeCgroup { .. }) | Step::JoinCgroup(JoinCgroup { .. }) => Some(cgroup_hint(step, raw)),
        _ if raw == libc::ENOSYS => missing_call_hint(step),
        _ => diagnose::setup_hint(raw),
    }
}

/// What a kernel that lacks a call is missing, for the steps that need a
/// recent one.
/// What the warden needs of the kernel: its filter's and its start's hint.
const WARDEN_NEEDS: &str = "this kernel lacks seccomp user notification (Linux 5.0) or pidfd_open (Linux 5.3), which the warden needs";

fn missing_call_hint(step: &Step) -> Option<String> {
    match step {
        Step::CloneTree(CloneTree { .. })
        | Step::AttachTree(AttachTree { .. })
        | Step::SetTreeAttr(SetTreeAttr { .. })
        | Step::SetPathAttr(SetPathAttr { .. })
        | Step::ReadOnlyInPlace(ReadOnlyInPlace { legacy: false, .. }) => Some(
            "this kernel lacks the new mount API (open_tree and move_mount: Linux 5.2; mount_setattr: \
             Linux 5.12); QWRAP_MOUNT_API=legacy uses mount(2), as qwrap does by itself where \
             mount_setattr is missing"
                .into(),
        ),
        Step::MakeMountPoint(MakeMountPoint { if_missing: true, .. }) => Some(
            "this kernel lacks openat2(2) (Linux 5.6), which bwrap mode needs to find destinations \
             inside the new root"
                .into(),
        ),
        Step::Seccomp(p) if p.warden => Some(WARDEN_NEEDS.into()),
        Step::StartWarden(_) => Some(WARDEN_NEEDS.into()),
        Step::SealFds(SealFds { .. }) => Some("this kernel lacks close_range(2) (Linux 5.9)".into()),
        _ => None,
    }
}

/// Why a cgroup step of the limits failed, and what to do.
fn cgroup_hint(step: &Step, raw: i32) -> String {
    let join = matches!(step, Step::JoinCgroup(JoinCgroup { .. }));
    match raw {
        libc::EEXIST => "a group of this name was left by an earlier sandbox whose warden did not end (it was killed): remove it (rmdir) and run again".into(),
        libc::ENOENT => "the group has no such file: the kernel lacks it (memory.oom.group: Linux 4.19), or swap is not accounted (memory.swap.max, memory.memsw.*: boot with swapaccount=1, or turn swap off); or leave that limit out".into(),
        libc::EACCES | libc::EPERM | libc::EROFS if join => "the caller may not move itself into the group (on cgroup v2 it needs write access to cgroup.procs of the group both lie under): run qwrap in a group delegated to it, e.g. `systemd-run --user --scope -p Delegate=yes qwrap run …`, or leave the limits out".into(),
        libc::EACCES | libc::EPERM | libc::EROFS => "the caller may not make or write cgroups there: run qwrap in a group delegated to it, e.g. `systemd-run --user --scope -p Delegate=yes qwrap run …`, or leave the limits out".into(),
        libc::EINVAL => "the kernel refused the value (a CPU quota below 1 ms a period, or a limit the parent group does not allow)".into(),
        _ => "the sandbox's cgroup could not be set up; leave the limits out to run without them".into(),
    }
}

fn exec_hint(errno: i32, cmd: Option<&std::ffi::OsString>) -> String {
    let cmd = cmd.map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    match errno {
        libc::ENOENT => format!("{cmd:?} was not found (PATH is searched inside the sandbox)"),
        libc::EACCES => format!(
            "{cmd:?} is not executable: a directory, a file without execute permission, or on a noexec mount"
        ),
        _ => format!("{cmd:?} could not be executed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Chdir;
    use crate::plan::{Flags, Namespaces};

    fn monitor(user: bool, join: bool) -> Step {
        Step::CloneMonitor(CloneMonitor {
            ns: Namespaces {
                user,
                ..Namespaces::default()
            },
            info_fd: None,
            json_status_fd: None,
            join,
            forward_signals: false,
            explain: None,
        })
    }

    #[test]
    fn a_missing_mount_call_names_the_kernel_it_needs() {
        let step = Step::SetTreeAttr(SetTreeAttr {
            tree: 0,
            set: Flags::RDONLY_NOSUID,
            private: true,
        });
        assert!(
            for_step(&step, libc::ENOSYS)
                .unwrap()
                .contains("mount_setattr: Linux 5.12")
        );
        assert_eq!(
            for_step(
                &Step::Chdir(Chdir {
                    candidates: vec!["/".into()]
                }),
                libc::ENOSYS
            ),
            None
        );
    }

    #[test]
    fn making_a_user_namespace_gets_the_user_namespace_hint() {
        let h = for_step(&monitor(true, false), libc::ENOSPC).unwrap();
        assert!(h.contains("user namespaces"), "{h}");
        // A plain fork makes no namespace: nothing about user namespaces.
        assert!(for_step(&monitor(true, true), libc::ENOSPC).is_none());
    }
}
