//! The printed calls of `--isolation landlock`'s own steps.

use super::step::Step;
use super::step_args::q;
use std::fmt;
use std::path::PathBuf;

/// A landlock-mode step's text; the others are step_text.rs's.
pub(super) fn write(step: &Step, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match step {
        Step::MakePrivateDir { path } => write!(
            f,
            "mkdir({}, 0700) on the host: a new directory (one already there fails the step)",
            q(path)
        ),
        Step::LandlockAllowList(super::AllowRules {
            abi,
            read,
            list,
            write,
            fifo,
            write_files,
            scoped,
            no_tcp,
        }) => {
            write!(
                f,
                "landlock_create_ruleset(ABI {abi}, handled=read|write-type{}{}); openat(each path, O_PATH) and landlock_add_rule(PATH_BENEATH, …) for: read beneath {}; list only {}; read and write beneath {} (FIFOs only beneath {}); read and write the devices {} and the character devices on fds 0-2, write the files handed over for writing there, found by fcntl(F_GETFL), fstat and readlink; prctl(PR_SET_NO_NEW_PRIVS, 1); landlock_restrict_self()",
                if *no_tcp { ", TCP bind|connect" } else { "" },
                if *scoped {
                    ", scoped=SIGNAL|ABSTRACT_UNIX_SOCKET"
                } else {
                    ""
                },
                paths(read),
                paths(list),
                paths(write),
                paths(fifo),
                paths(write_files),
            )
        }
        Step::LandlockOnlyFilter { closed } => write!(
            f,
            "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {{socket({}) fails with EPERM; socketpair(AF_UNIX, SOCK_DGRAM) fails with EPERM; ioctl({}) fails with EPERM; chown, fchown, lchown, fchownat, the setxattr and removexattr calls, file_setattr, keyctl, add_key, request_key, the SysV IPC calls (shmget, shmat, shmctl, semget, semop, semtimedop, semctl, msgget, msgsnd, msgrcv, msgctl) and mq_open, mq_unlink, mq_timedsend, mq_timedreceive, mq_notify, mq_getsetattr fail with EPERM}})",
            if *closed { "every family" } else { "AF_UNIX" },
            super::filter_landlock::INODE_IOCTLS.map(|(_, n)| n).join("|")
        ),
        _ => Ok(()),
    }
}

fn paths(v: &[PathBuf]) -> String {
    if v.is_empty() {
        return "nothing".into();
    }
    v.iter().map(|p| q(p)).collect::<Vec<_>>().join(", ")
}
