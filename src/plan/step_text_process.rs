//! The printed calls of the process steps: the monitor, PID 1, the
//! sessions, joining namespaces, capabilities, the confinement's layers,
//! exec.

use super::filter_text;
use super::step::{Ambient, Step};
use super::step_args::{DETACHED_END, DETACHED_LIGHT, DYING_CHILD, ONE_THREAD, WAIT_FOR_MONITOR, q};
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
        super::filter_text::described(super::filter_rules::Profile::PLAIN)
    } else {
        "nothing refused".to_string()
    };
    write!(
        f,
        "seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, {refused}; {} and every call those refuse to the monitor); sendmsg(monitor, SCM_RIGHTS listener)",
        super::filter_explain::EXPLAINED_CALLS.join("/")
    )
}

/// `Step::DropCapabilities`'s calls.
pub(super) fn capabilities(
    keep: &[u32],
    bounding: bool,
    ambient: Ambient,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let but = if keep.is_empty() {
        String::new()
    } else {
        format!(" but {keep:?}")
    };
    if bounding {
        write!(f, "prctl(PR_CAPBSET_DROP, every cap{but}); ")?;
    }
    if keep.is_empty() {
        write!(
            f,
            "prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL); capset(effective=0, permitted=0, inheritable=0)"
        )
    } else {
        write!(
            f,
            "prctl(PR_CAP_AMBIENT_LOWER, every cap{but}); capget(); capset(only {keep:?}{}) (skipped when nothing changes)",
            if ambient == Ambient::Raise {
                ", inheritable = permitted"
            } else {
                ""
            }
        )?;
        match ambient {
            Ambient::Lower => Ok(()),
            Ambient::Raise => write!(f, "; prctl(PR_CAP_AMBIENT_RAISE, each kept)"),
            Ambient::Offer => write!(
                f,
                "; prctl(PR_CAP_AMBIENT_RAISE, each kept), refusals ignored (the inheritable set decides, as in bubblewrap)"
            ),
        }
    }
}

/// `Step::Exec`'s call: the command and how its environment changes.
pub(super) fn exec(
    argv: &[std::ffi::OsString],
    env: &crate::policy::EnvRules,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let args: Vec<String> = argv.iter().map(|a| format!("{a:?}")).collect();
    let mut changes: Vec<String> = env
        .unset
        .iter()
        .map(|k| format!("-{}", k.to_string_lossy()))
        .collect();
    changes.extend(
        env.set
            .iter()
            .map(|(k, v)| format!("+{}={}", k.to_string_lossy(), v.to_string_lossy())),
    );
    write!(
        f,
        "execvp({}, [{}]) with environment {}",
        args.first().map(String::as_str).unwrap_or("\"\""),
        args.join(", "),
        changes.join(" ")
    )
}

/// The confinement's steps: no_new_privs, Landlock, the seccomp filters, the\n/// reaper, the git dirs handed over, the descriptors sealed or reopened.
pub(super) fn confinement(step: &Step, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match step {
        Step::RefuseKeyrings => write!(
            f,
            "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {{{} = EPERM, otherwise allow}})",
            super::filter_landlock::KEYRING_CALLS.join("/")
        ),
        Step::Seccomp(p) if p.warden => {
            write!(
                f,
                "seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, {}",
                filter_text::described(*p)
            )?;
            if p.explain {
                write!(f, "{}", filter_text::explained(p.landlock_only, !p.unscoped))?;
            }
            write!(f, "); sendmsg(warden, SCM_RIGHTS listener)")
        }
        Step::SeccompToMonitor { layers } => super::step_text_process::to_monitor(f, *layers),
        Step::NoNewPrivs => write!(f, "prctl(PR_SET_NO_NEW_PRIVS, 1)"),
        Step::Landlock {
            abi,
            paths,
            fifo,
            scoped,
        } => landlock_text(*abi, paths, fifo, *scoped, f),
        Step::HandGitDirs { dirs } => {
            let names: Vec<String> = dirs.iter().map(|d| q(d)).collect();
            write!(
                f,
                "open(each of {}, O_RDONLY|O_DIRECTORY); sendmsg(warden, SCM_RIGHTS each); read(warden) = the warden has copied in the host's files (it then keeps git's allow-listed files in step both ways, under git's locks, with inotify)",
                names.join(", ")
            )
        }
        Step::StartReaper => write!(
            f,
            "getpid() = the command; landlock_create_ruleset(handled=REFER, scoped=SIGNAL); open(\"/\", O_PATH); fstat; landlock_add_rule(PATH_BENEATH, REFER, \"/\"); prctl(PR_SET_NO_NEW_PRIVS, 1); landlock_restrict_self(); pidfd_open(the command); {ONE_THREAD}mmap(64 KiB stack for the reaper, never unmapped); {DETACHED_LIGHT}the reaper on that stack, sharing the command's memory until its exec (in it, raw system calls only: a session of its own, open of the null device onto 0-2, close_range of all but the pidfd, poll of the command's pidfd, then, if the warden (the caller's, outside) is out of its reach, kill(-1, SIGKILL)){DETACHED_END}; sendmsg(warden, SCM_RIGHTS pidfd)"
        ),
        Step::Seccomp(p) => write!(
            f,
            "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {})",
            filter_text::described(*p)
        ),
        Step::ReopenFd { fd, path } => write!(
            f,
            "fcntl({fd}, F_GETFL); open({}, that access mode|O_NOCTTY); fstat both: the same device; dup2 onto fd {fd}",
            q(path)
        ),
        Step::SealFds { keep, closed } => {
            let closed: Vec<String> = closed.iter().map(|(fd, what)| format!("{fd} ({what})")).collect();
            write!(
                f,
                "close_range(3, ~0U, CLOSE_RANGE_CLOEXEC); fcntl(F_SETFD, 0) on kept fds {keep:?}; closed at exec: [{}]",
                closed.join(", ")
            )
        }
        _ => Ok(()),
    }
}

/// `Step::Landlock`'s calls.
fn landlock_text(
    abi: u32,
    paths: &[std::path::PathBuf],
    fifo: &[std::path::PathBuf],
    scoped: bool,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let beneath: Vec<String> = paths.iter().map(|p| q(p)).collect();
    let fifos: Vec<String> = fifo.iter().map(|p| q(p)).collect();
    write!(
        f,
        "landlock_create_ruleset(ABI {abi}, handled=write-type{}); openat(each path, O_PATH) and landlock_add_rule(PATH_BENEATH, write-type but MAKE_FIFO, {} and the terminals on fds 0-2, found by fcntl(F_GETFL), readlink and fstat); landlock_add_rule(PATH_BENEATH, MAKE_FIFO, {}); prctl(PR_SET_NO_NEW_PRIVS, 1); landlock_restrict_self()",
        if scoped {
            ", scoped=SIGNAL|ABSTRACT_UNIX_SOCKET"
        } else {
            ""
        },
        beneath.join(", "),
        fifos.join(", ")
    )
}
