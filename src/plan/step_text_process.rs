//! The printed calls of the process steps: the monitor, PID 1, the
//! sessions, joining namespaces, the last layers before exec.

use super::filter_text;
use super::step::Step;
use super::step_args::{DYING_CHILD, ONE_THREAD, WAIT_FOR_MONITOR, q};
use std::fmt;

/// How a process outside the command passes signals on (`run --pid
/// private`: the monitor, then PID 1).
const FORWARD: &str = "rt_sigaction(HUP, INT, QUIT, TERM, USR1, USR2, WINCH, CONT: SA_SIGINFO, a handler that passes each one a process sent (si_code <= 0, not a terminal's) on with kill)";

/// The handlers set before the monitor's clone, so that neither side is
/// ever without them.
const FORWARD_HELD: &str = "rt_sigaction(the same signals, SA_SIGINFO: one a process sends is kept until there is a command to pass it to)";

/// A process step's text; the others are step_text.rs's.
pub(super) fn write(step: &Step, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match step {
        Step::DieWithParent => write!(
            f,
            "prctl(PR_SET_PDEATHSIG, SIGKILL); getppid() is still the parent"
        ),
        Step::DetachTerminal => write!(
            f,
            "open(\"/dev/tty\", O_RDWR|O_NOCTTY|O_NONBLOCK|O_CLOEXEC) (ENXIO: none, nothing to do); ioctl(fd, TIOCNOTTY)"
        ),
        Step::StayInit => write!(
            f,
            "qwrap is PID 1 of its PID namespace: {ONE_THREAD}fork(); the parent stays as PID 1, not dumpable, passes signals on to the child, wait4(-1, __WALL) until ECHILD (every orphan, the warden's last work), then exits as the child did; the child, rt_sigaction(each signal held, SIG_DFL), goes on (getppid() = PID 1)"
        ),
        Step::NewSession => write!(
            f,
            "setsid(); a group leader ({ONE_THREAD}) forks first and stays as a supervisor that forwards signals{DYING_CHILD}"
        ),
        Step::CloneMonitor {
            ns,
            join,
            info_fd,
            json_status_fd,
            forward_signals,
            explain,
        } => {
            if explain.is_some() {
                write!(f, "socketpair(SOCK_SEQPACKET) for the filter's listener; ")?;
            }
            clone_monitor(
                f,
                ns,
                *join,
                info_fd.is_some() || json_status_fd.is_some(),
                json_status_fd.is_some(),
                *forward_signals,
            )?;
            if explain.is_some() {
                write!(
                    f,
                    " (QWRAP_EXPLAIN: the monitor answers the calls the filter hands it, as its layers would, and says each refusal once the last process holding the filter is gone)"
                )?;
            }
            Ok(())
        }
        Step::JoinNamespace { fd, pid } => write!(
            f,
            "setns({fd}, {})",
            if *pid { "CLONE_NEWPID" } else { "CLONE_NEWUSER" }
        ),
        Step::ForkIntoPidNamespace { new_pidns } => write!(
            f,
            "{}{ONE_THREAD}fork(); the parent reports the child's pid to the monitor and waits{DYING_CHILD}{WAIT_FOR_MONITOR}",
            if *new_pidns { "unshare(CLONE_NEWPID); " } else { "" },
        ),
        Step::NotifyMonitor => write!(f, "write(ready pipe, getpid()){WAIT_FOR_MONITOR}"),
        Step::AssertUsernsDisabled => write!(f, "unshare(CLONE_NEWUSER) fails"),
        Step::SetHostname { name } => write!(f, "sethostname({name:?})"),
        Step::CallerSeccomp { programs } => write!(
            f,
            "{} program(s) kept for the command (installed just before execve: prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER))",
            programs.len()
        ),
        Step::PidOneInit {
            forward_signals,
            wait_all,
        } => {
            write!(f, "{ONE_THREAD}fork()")?;
            if *forward_signals {
                write!(f, " (PID 1: {FORWARD})")?;
            }
            write!(
                f,
                "; PID 1 waits for every child and exits as the command does{}",
                if *wait_all {
                    ", once no process is left"
                } else {
                    " (its exit ends every process left)"
                }
            )?;
            if *forward_signals {
                write!(
                    f,
                    " (when the command ends it says how on the monitor's pipe{})",
                    if *wait_all {
                        ", after prctl(PR_SET_PDEATHSIG, 0): the monitor goes, PID 1 stays"
                    } else {
                        ""
                    }
                )?;
            }
            write!(f, "{DYING_CHILD}")
        }
        Step::HandInit => write!(
            f,
            "pidfd_open(getpid()); sendmsg(warden, SCM_RIGHTS pidfd, \"I\") (the warden ends when PID 1 does)"
        ),
        Step::SeccompPrivatePid { unscoped, root } => write!(
            f,
            "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {})",
            filter_text::described(false, *unscoped, *root, false)
        ),
        Step::LandlockScopes { abi } => write!(
            f,
            "landlock_create_ruleset(ABI {abi}, handled_access_fs=0, scoped=SIGNAL|ABSTRACT_UNIX_SOCKET); prctl(PR_SET_NO_NEW_PRIVS, 1); landlock_restrict_self()"
        ),
        Step::BlockOnFd { fd } => write!(f, "read({fd}, 1 byte)"),
        Step::LockFile { path } => write!(f, "fcntl(open({}, O_RDONLY), F_SETLK, F_RDLCK)", q(path)),
        Step::DisableUserns => write!(
            f,
            "open(\"/proc\", O_PATH) = proc (kept); openat(proc, \"sys/user/max_user_namespaces\", O_WRONLY); write(\"1\")"
        ),
        Step::NestUserNamespace { uid, gid } => write!(
            f,
            "unshare(CLONE_NEWUSER); openat(proc, \"self/uid_map\"); write(\"{uid} {uid} 1\"); openat(proc, \"self/gid_map\"); write(\"{gid} {gid} 1\")"
        ),
        other => write!(f, "{other:?}"),
    }
}

/// CloneMonitor's text.
fn clone_monitor(
    f: &mut fmt::Formatter<'_>,
    ns: &super::Namespaces,
    join: bool,
    reports: bool,
    json_status: bool,
    forward_signals: bool,
) -> fmt::Result {
    if join || reports {
        write!(f, "pipe2(O_CLOEXEC) for the child's reports; ")?;
    }
    if forward_signals {
        write!(f, "pipe2(O_CLOEXEC) for how the command ended; {FORWARD_HELD}; ")?;
    }
    write!(
        f,
        "{ONE_THREAD}clone({}SIGCHLD); the parent waits as the monitor",
        if join {
            String::new()
        } else {
            format!("{}|", ns.names())
        }
    )?;
    write!(f, "{DYING_CHILD}; in the child getppid() = the monitor")?;
    if reports {
        write!(f, ", statx of /proc/CHILD/ns/* for the namespace ids")?;
        if !join {
            write!(f, "; the child read(go pipe) until the monitor has them")?;
        }
    }
    if join || json_status {
        write!(f, ", read of the reports (fcntl O_NONBLOCK once the child ended)")?;
    }
    if forward_signals {
        write!(
            f,
            " (the monitor: {FORWARD}; it ends as PID 1 says the command ended, by the same exit code or signal)"
        )?;
    }
    Ok(())
}

/// bwrap mode's filter with `QWRAP_EXPLAIN`: its layers' refusals folded
/// in, or none.
pub(super) fn to_monitor(f: &mut fmt::Formatter<'_>, layers: bool) -> fmt::Result {
    let refused = if layers {
        super::filter_text::described(false, false, false, false)
    } else {
        "nothing refused".to_string()
    };
    write!(
        f,
        "seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, {refused}; {} and every call those refuse to the monitor); sendmsg(monitor, SCM_RIGHTS listener)",
        super::filter_explain::EXPLAINED_CALLS.join("/")
    )
}
