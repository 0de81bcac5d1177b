//! The hint under a failed step: what on this host explains the errno.
//! Each family's own hints lie with its steps' execution
//! (host_steps.rs, namespaces_steps.rs, mounts_steps.rs,
//! process_steps.rs); what none of them says, the errno's usual cause.

use crate::host::diagnose;
use crate::plan::{Step, View};

pub(super) fn for_step(step: &Step, raw: i32) -> Option<String> {
    let own = match step.view() {
        View::Host(s) => super::host_steps::hint(s, raw),
        View::Namespace(s) => super::namespaces_steps::hint(s, raw),
        View::Mount(s) => super::mounts_steps::hint(s, raw),
        View::Process(s) => super::process_steps::hint(s, raw),
    };
    match own {
        Some(h) => Some(h),
        // A call the kernel lacks that no step names: its own words say it.
        None if raw == libc::ENOSYS => None,
        None => diagnose::setup_hint(raw),
    }
}

/// What the warden needs of the kernel: its filter's and its start's hint.
pub(super) const WARDEN_NEEDS: &str = "this kernel lacks seccomp user notification (Linux 5.0) or pidfd_open (Linux 5.3), which the warden needs";

/// A fork refused while another thread runs (the warden's, the reaper's).
pub(super) const THREADS: &str =
    "this process has more than one thread, and a fork could copy a lock another thread holds";

/// Why a cgroup step of the limits failed, and what to do.
pub(super) fn cgroup_hint(join: bool, raw: i32) -> String {
    match raw {
        libc::EEXIST => "a group of this name was left by an earlier sandbox whose warden did not end (it was killed): remove it (rmdir) and run again".into(),
        libc::ENOENT => "the group has no such file: the kernel lacks it (memory.oom.group: Linux 4.19), or swap is not accounted (memory.swap.max, memory.memsw.*: boot with swapaccount=1, or turn swap off); or leave that limit out".into(),
        libc::EACCES | libc::EPERM | libc::EROFS if join => "the caller may not move itself into the group (on cgroup v2 it needs write access to cgroup.procs of the group both lie under): run qwrap in a group delegated to it, e.g. `systemd-run --user --scope -p Delegate=yes qwrap run …`, or leave the limits out".into(),
        libc::EACCES | libc::EPERM | libc::EROFS => "the caller may not make or write cgroups there: run qwrap in a group delegated to it, e.g. `systemd-run --user --scope -p Delegate=yes qwrap run …`, or leave the limits out".into(),
        libc::EINVAL => "the kernel refused the value (a CPU quota below 1 ms a period, or a limit the parent group does not allow)".into(),
        _ => "the sandbox's cgroup could not be set up; leave the limits out to run without them".into(),
    }
}

pub(super) fn exec_hint(errno: i32, cmd: Option<&std::ffi::OsString>) -> String {
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
    use crate::plan::{Chdir, CloneMonitor, Flags, Namespaces, SetTreeAttr};

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
