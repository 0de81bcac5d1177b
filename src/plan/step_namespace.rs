//! The namespaces' steps: unshare, the id maps, the monitor and the forks
//! into a PID namespace, the hostname, a nested user namespace. Their
//! types, the calls `qwrap plan` prints for each, and what each is for.

use super::step_args::{DYING_CHILD, IdMap, Namespaces, ONE_THREAD, WAIT_FOR_MONITOR};
use serde::Serialize;
use std::ffi::OsString;
use std::fmt;

/// unshare(2) of these namespaces, the mount namespace always (a PID
/// namespace is entered by forking: `ForkIntoPidNamespace`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unshare {
    pub ns: Namespaces,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteIdMap {
    pub map: IdMap,
    pub inside: u32,
    pub outside: u32,
}

/// Fork into new namespaces (bwrap mode; `run --pid private`); the
/// parent stays outside as the monitor that reports and relays the exit
/// status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CloneMonitor {
    pub ns: Namespaces,
    pub info_fd: Option<i32>,
    pub json_status_fd: Option<i32>,
    /// Plain fork: the child joins or makes its namespaces itself and
    /// tells the monitor its pid when they are ready.
    pub join: bool,
    /// `run`: the signals sent to qwrap (HUP, INT, QUIT, TERM, USR1,
    /// USR2) go on to the sandbox's PID 1, which passes them to the
    /// command: qwrap stays the command's stand-in for the caller.
    pub forward_signals: bool,
    /// bwrap mode with `QWRAP_EXPLAIN`: the monitor judges the calls
    /// `SeccompToMonitor` hands it and says the refusals at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Box<super::explain::Explain>>,
}

/// `setns(fd)`: joins a user or PID namespace handed over by fd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinNamespace {
    pub fd: i32,
    pub pid: bool,
}

/// Forks so that the child lands in the PID namespace joined just
/// before, or a new one (`unshare(CLONE_NEWPID)` first); the parent
/// tells the monitor the child's pid, waits and exits as it does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForkIntoPidNamespace {
    pub new_pidns: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetHostname {
    #[serde(serialize_with = "ser_os")]
    pub name: OsString,
}

/// Enters a user namespace nested in the sandbox's own, with the same
/// ids: the command holds no capability where the limit was set, so it
/// cannot raise it again (bubblewrap's --disable-userns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NestUserNamespace {
    pub uid: u32,
    pub gid: u32,
}

/// A namespace step, by reference: what its text and purpose match on.
#[derive(Debug, Clone, Copy)]
pub enum NamespaceStep<'a> {
    Unshare(&'a Unshare),
    DenySetgroups,
    WriteIdMap(&'a WriteIdMap),
    LoopbackUp,
    CloneMonitor(&'a CloneMonitor),
    JoinNamespace(&'a JoinNamespace),
    ForkIntoPidNamespace(&'a ForkIntoPidNamespace),
    NotifyMonitor,
    AssertUsernsDisabled,
    SetHostname(&'a SetHostname),
    DisableUserns,
    NestUserNamespace(&'a NestUserNamespace),
}

impl fmt::Display for NamespaceStep<'_> {
    /// The step's calls, as `qwrap plan` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            NamespaceStep::Unshare(s) => s.fmt(f),
            NamespaceStep::WriteIdMap(s) => s.fmt(f),
            NamespaceStep::CloneMonitor(s) => s.fmt(f),
            NamespaceStep::JoinNamespace(s) => s.fmt(f),
            NamespaceStep::ForkIntoPidNamespace(s) => s.fmt(f),
            NamespaceStep::SetHostname(s) => s.fmt(f),
            NamespaceStep::NestUserNamespace(s) => s.fmt(f),
            NamespaceStep::DenySetgroups => {
                write!(f, "openat(\"/proc/self/setgroups\", O_WRONLY); write(\"deny\")")
            }
            NamespaceStep::LoopbackUp => write!(
                f,
                "ioctl(socket(AF_INET, SOCK_DGRAM), SIOCSIFFLAGS, {{\"lo\", IFF_UP}})"
            ),
            NamespaceStep::NotifyMonitor => write!(f, "write(ready pipe, getpid()){WAIT_FOR_MONITOR}"),
            NamespaceStep::AssertUsernsDisabled => write!(f, "unshare(CLONE_NEWUSER) fails"),
            NamespaceStep::DisableUserns => write!(
                f,
                "open(\"/proc\", O_PATH) = proc (kept); openat(proc, \"sys/user/max_user_namespaces\", O_WRONLY); write(\"1\")"
            ),
        }
    }
}

impl NamespaceStep<'_> {
    /// A short phrase naming what the step is for, used in error messages.
    pub fn purpose(&self) -> String {
        match *self {
            NamespaceStep::Unshare(Unshare { ns }) if ns.user && !ns.net => {
                "create user and mount namespaces".into()
            }
            NamespaceStep::Unshare(Unshare { ns }) if ns.user => {
                "create user, mount and network namespaces".into()
            }
            NamespaceStep::Unshare(Unshare { .. }) => "create the sandbox's namespaces".into(),
            NamespaceStep::DenySetgroups => "deny setgroups in the user namespace".into(),
            NamespaceStep::WriteIdMap(WriteIdMap { map, inside, .. }) => {
                format!(
                    "map {} {inside} to itself",
                    if *map == IdMap::Uid { "uid" } else { "gid" }
                )
            }
            NamespaceStep::LoopbackUp => "bring up lo in the new network namespace".into(),
            NamespaceStep::CloneMonitor(CloneMonitor { join: false, .. }) => {
                "create the sandbox's namespaces".into()
            }
            NamespaceStep::CloneMonitor(CloneMonitor { join: true, .. }) => {
                "start the sandbox's process".into()
            }
            NamespaceStep::JoinNamespace(JoinNamespace { pid: false, .. }) => {
                "join the user namespace".into()
            }
            NamespaceStep::JoinNamespace(JoinNamespace { pid: true, .. }) => "join the PID namespace".into(),
            NamespaceStep::ForkIntoPidNamespace(ForkIntoPidNamespace { .. }) => {
                "enter the PID namespace".into()
            }
            NamespaceStep::NotifyMonitor => "report to the monitor".into(),
            NamespaceStep::AssertUsernsDisabled => "check that user namespaces are disabled".into(),
            NamespaceStep::SetHostname(SetHostname { .. }) => "set the hostname".into(),
            NamespaceStep::DisableUserns => "disable user namespaces inside".into(),
            NamespaceStep::NestUserNamespace(NestUserNamespace { .. }) => {
                "enter the nested user namespace".into()
            }
        }
    }
}

/// How a process outside the command passes signals on (`run --pid
/// private`: the monitor, then PID 1).
pub(super) const FORWARD: &str = "rt_sigaction(HUP, INT, QUIT, TERM, USR1, USR2, WINCH, CONT: SA_SIGINFO, a handler that passes each one a process sent (si_code <= 0, not a terminal's) on with kill)";

/// The handlers set before the monitor's clone, so that neither side is
/// ever without them.
const FORWARD_HELD: &str = "rt_sigaction(the same signals, SA_SIGINFO: one a process sends is kept until there is a command to pass it to)";

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

impl fmt::Display for Unshare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Unshare { ns } = self;
        write!(f, "unshare({})", ns.names())
    }
}

impl fmt::Display for WriteIdMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let WriteIdMap { map, inside, outside } = self;
        let file = if *map == IdMap::Uid { "uid_map" } else { "gid_map" };
        write!(
            f,
            "openat(\"/proc/self/{file}\", O_WRONLY); write(\"{inside} {outside} 1\")"
        )
    }
}

impl fmt::Display for CloneMonitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CloneMonitor {
            ns,
            join,
            info_fd,
            json_status_fd,
            forward_signals,
            explain,
        } = self;
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
}

impl fmt::Display for JoinNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let JoinNamespace { fd, pid } = self;
        write!(
            f,
            "setns({fd}, {})",
            if *pid { "CLONE_NEWPID" } else { "CLONE_NEWUSER" }
        )
    }
}

impl fmt::Display for ForkIntoPidNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ForkIntoPidNamespace { new_pidns } = self;
        write!(
            f,
            "{}{ONE_THREAD}fork(); the parent reports the child's pid to the monitor and waits{DYING_CHILD}{WAIT_FOR_MONITOR}",
            if *new_pidns { "unshare(CLONE_NEWPID); " } else { "" },
        )
    }
}

impl fmt::Display for SetHostname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SetHostname { name } = self;
        write!(f, "sethostname({name:?})")
    }
}

impl fmt::Display for NestUserNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let NestUserNamespace { uid, gid } = self;
        write!(
            f,
            "unshare(CLONE_NEWUSER); openat(proc, \"self/uid_map\"); write(\"{uid} {uid} 1\"); openat(proc, \"self/gid_map\"); write(\"{gid} {gid} 1\")"
        )
    }
}

fn ser_os<S: serde::Serializer>(v: &OsString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string_lossy())
}
