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
