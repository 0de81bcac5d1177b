//! The process's steps: privileges, Landlock, seccomp, descriptors, the
//! session and the terminal, PID 1, the command. Their types, the calls
//! `qwrap plan` prints for each, and what each is for.

use super::filter_text;
use super::step_args::{Ambient, DETACHED_END, DETACHED_LIGHT, DYING_CHILD, ONE_THREAD, q};
use super::step_namespace::FORWARD;
use crate::policy::EnvRules;
use serde::Serialize;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

/// The process that goes on to be the command (qwrap's own, or PID 1
/// of a private PID namespace, just forked) moves into each of the
/// sandbox's groups: all it forks is born there; the warden and the
/// monitor, started before, stay out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinCgroup {
    #[serde(serialize_with = "crate::lossy::paths")]
    pub groups: Vec<PathBuf>,
}

/// `--network proxied`: the proxy's listening socket, made in the
/// sandbox's network namespace and handed to the warden, which serves
/// it from the host's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListenEgress {
    pub port: u16,
}

/// Every capability but `keep` leaves the effective, permitted,
/// inheritable and ambient sets, and the bounding set with `bounding`;
/// `ambient` says what the kept ones do there. `run`: nothing kept,
/// bounding included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DropCapabilities {
    pub keep: Vec<u32>,
    pub bounding: bool,
    pub ambient: Ambient,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Landlock {
    pub abi: u32,
    /// Write-type access beneath each, but making FIFOs.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub paths: Vec<PathBuf>,
    /// FIFOs made only beneath these: nothing of the host's reads
    /// there later (the private /tmp, /dev, caches in layers).
    #[serde(serialize_with = "crate::lossy::paths")]
    pub fifo: Vec<PathBuf>,
    pub scoped: bool,
}

/// `--isolation landlock`: a second filter for what the host shares
/// without namespaces: no Unix socket can be made (none at all with
/// the network closed), no keyring, SysV IPC or POSIX message queue
/// call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LandlockOnlyFilter {
    pub closed: bool,
}

/// The sandbox's own git dir levels (tmpfs, mounted), opened inside and
/// handed to the warden, which fills them from the host's and keeps
/// both in step; the setup waits for it to have filled them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandGitDirs {
    #[serde(serialize_with = "crate::lossy::paths")]
    pub dirs: Vec<PathBuf>,
}

/// bwrap mode with `QWRAP_EXPLAIN`: the filter that hands the monitor
/// every call that can be refused (its layers' refusals folded in with
/// `layers`; without them no call is refused), and its listener.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeccompToMonitor {
    pub layers: bool,
}

/// Opens `path` again with the access mode of `fd` and puts it at `fd`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReopenFd {
    pub fd: i32,
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
}

/// Only 0-2 and `keep` reach the command; `closed` names what the
/// inventory found and leaves behind, for the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealFds {
    pub keep: Vec<i32>,
    pub closed: Vec<(i32, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exec {
    #[serde(serialize_with = "ser_argv")]
    pub argv: Vec<OsString>,
    #[serde(skip)]
    pub argv0: Option<OsString>,
    pub env: EnvRules,
}

/// The first of these directories that exists becomes the working
/// directory, and the command's PWD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chdir {
    #[serde(serialize_with = "crate::lossy::paths")]
    pub candidates: Vec<PathBuf>,
}

/// The caller's seccomp programs (raw `struct sock_filter` arrays, read
/// from its fds while parsing), installed just before execve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallerSeccomp {
    #[serde(serialize_with = "program_lengths")]
    pub programs: Vec<Vec<u8>>,
}

/// PID 1 of a new PID namespace: fork the command, reap every child,
/// exit as the command does (`wait_all`: once every process is gone,
/// for --keep-background). `forward_signals`: what a process outside
/// sends it goes on to the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PidOneInit {
    pub forward_signals: bool,
    pub wait_all: bool,
}

/// `run --pid private`: a Landlock domain that only scopes signals and
/// abstract sockets (one that handles filesystem access would forbid
/// the mounts nested sandboxes make).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LandlockScopes {
    pub abi: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockOnFd {
    pub fd: i32,
}

/// Holds a read lock on a file for the command's life (the fd is left
/// open across exec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockFile {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
}

/// A process step, by reference: what its text and purpose match on.
#[derive(Debug, Clone, Copy)]
pub enum ProcessStep<'a> {
    ListenEgress(&'a ListenEgress),
    SeccompToMonitor(&'a SeccompToMonitor),
    Chdir(&'a Chdir),
    DropCapabilities(&'a DropCapabilities),
    NoNewPrivs,
    Landlock(&'a Landlock),
    Seccomp(&'a super::filter_rules::Profile),
    StartReaper,
    LandlockAllowList(&'a super::AllowRules),
    LandlockOnlyFilter(&'a LandlockOnlyFilter),
    RefuseKeyrings,
    HandGitDirs(&'a HandGitDirs),
    CallerSeccomp(&'a CallerSeccomp),
    ReopenFd(&'a ReopenFd),
    SealFds(&'a SealFds),
    DieWithParent,
    NewSession,
    StayInit,
    DetachTerminal,
    PidOneInit(&'a PidOneInit),
    HandInit,
    LandlockScopes(&'a LandlockScopes),
    BlockOnFd(&'a BlockOnFd),
    LockFile(&'a LockFile),
    JoinCgroup(&'a JoinCgroup),
    Exec(&'a Exec),
}

impl fmt::Display for ProcessStep<'_> {
    /// The step's calls, as `qwrap plan` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ProcessStep::ListenEgress(s) => s.fmt(f),
            ProcessStep::Chdir(s) => s.fmt(f),
            ProcessStep::DropCapabilities(s) => s.fmt(f),
            ProcessStep::Exec(s) => s.fmt(f),
            ProcessStep::JoinCgroup(s) => s.fmt(f),
            ProcessStep::CallerSeccomp(s) => s.fmt(f),
            ProcessStep::PidOneInit(s) => s.fmt(f),
            ProcessStep::LandlockScopes(s) => s.fmt(f),
            ProcessStep::BlockOnFd(s) => s.fmt(f),
            ProcessStep::LockFile(s) => s.fmt(f),
            ProcessStep::SeccompToMonitor(s) => s.fmt(f),
            ProcessStep::Landlock(s) => s.fmt(f),
            ProcessStep::HandGitDirs(s) => s.fmt(f),
            ProcessStep::ReopenFd(s) => s.fmt(f),
            ProcessStep::SealFds(s) => s.fmt(f),
            ProcessStep::LandlockOnlyFilter(s) => s.fmt(f),
            ProcessStep::DieWithParent => write!(
                f,
                "prctl(PR_SET_PDEATHSIG, SIGKILL); getppid() is still the parent"
            ),
            ProcessStep::DetachTerminal => write!(
                f,
                "open(\"/dev/tty\", O_RDWR|O_NOCTTY|O_NONBLOCK|O_CLOEXEC) (ENXIO: none, nothing to do); ioctl(fd, TIOCNOTTY)"
            ),
            ProcessStep::StayInit => write!(
                f,
                "qwrap is PID 1 of its PID namespace: {ONE_THREAD}fork(); the parent stays as PID 1, not dumpable, passes signals on to the child, wait4(-1, __WALL) until ECHILD (every orphan, the warden's last work), then exits as the child did; the child, rt_sigaction(each signal held, SIG_DFL), goes on (getppid() = PID 1)"
            ),
            ProcessStep::NewSession => write!(
                f,
                "setsid(); a group leader ({ONE_THREAD}) forks first and stays as a supervisor that forwards signals{DYING_CHILD}"
            ),
            ProcessStep::HandInit => write!(
                f,
                "pidfd_open(getpid()); sendmsg(warden, SCM_RIGHTS pidfd, \"I\") (the warden ends when PID 1 does)"
            ),
            ProcessStep::RefuseKeyrings => write!(
                f,
                "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {{{} = EPERM, otherwise allow}})",
                super::filter_landlock::KEYRING_CALLS.join("/")
            ),
            ProcessStep::Seccomp(p) if p.warden => {
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
            ProcessStep::NoNewPrivs => write!(f, "prctl(PR_SET_NO_NEW_PRIVS, 1)"),
            ProcessStep::StartReaper => write!(
                f,
                "getpid() = the command; landlock_create_ruleset(handled=REFER, scoped=SIGNAL); open(\"/\", O_PATH); fstat; landlock_add_rule(PATH_BENEATH, REFER, \"/\"); prctl(PR_SET_NO_NEW_PRIVS, 1); landlock_restrict_self(); pidfd_open(the command); {ONE_THREAD}mmap(64 KiB stack for the reaper, never unmapped); {DETACHED_LIGHT}the reaper on that stack, sharing the command's memory until its exec (in it, raw system calls only: a session of its own, open of the null device onto 0-2, close_range of all but the pidfd, poll of the command's pidfd, then, if the warden (the caller's, outside) is out of its reach, kill(-1, SIGKILL)){DETACHED_END}; sendmsg(warden, SCM_RIGHTS pidfd)"
            ),
            ProcessStep::Seccomp(p) => write!(
                f,
                "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {})",
                filter_text::described(*p)
            ),
            ProcessStep::LandlockAllowList(super::AllowRules {
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
        }
    }
}

impl ProcessStep<'_> {
    /// A short phrase naming what the step is for, used in error messages.
    pub fn purpose(&self) -> String {
        match *self {
            ProcessStep::ListenEgress(ListenEgress { .. }) => "hand the egress proxy's socket to the warden".into(),
            ProcessStep::RefuseKeyrings => "refuse the keyring calls".into(),
            ProcessStep::Seccomp(p) if p.warden && p.explain => {
                "install the seccomp filter, handing calls aimed at other processes and every call that can be refused to the warden".into()
            },
            ProcessStep::Seccomp(p) if p.warden => {
                "install the seccomp filter, handing calls aimed at other processes to the warden".into()
            },
            ProcessStep::SeccompToMonitor(SeccompToMonitor { .. }) => TO_MONITOR.into(),
            ProcessStep::Chdir(Chdir { candidates }) if candidates.len() == 1 => {
                format!("enter {}", candidates[0].display())
            },
            ProcessStep::Chdir(Chdir { .. }) => "enter the working directory".into(),
            ProcessStep::DropCapabilities(DropCapabilities { keep, .. }) if keep.is_empty() => "drop every capability".into(),
            ProcessStep::DropCapabilities(DropCapabilities { .. }) => "drop every capability but those kept".into(),
            ProcessStep::NoNewPrivs => "set no_new_privs".into(),
            ProcessStep::Landlock(Landlock { .. }) => "apply the Landlock ruleset".into(),
            ProcessStep::HandGitDirs(HandGitDirs { .. }) => "hand the sandbox's own git dir levels to the warden".into(),
            ProcessStep::StartReaper => "start the reaper that ends the sandbox with the command".into(),
            ProcessStep::Seccomp(_) => "install the seccomp filter".into(),
            ProcessStep::LandlockAllowList { .. } => "apply the Landlock rules over the host's view".into(),
            ProcessStep::LandlockOnlyFilter(LandlockOnlyFilter { .. }) => {
                "install the filter for what the host shares without namespaces".into()
            },
            ProcessStep::ReopenFd(ReopenFd { fd, path }) => format!("open fd {fd} again through {}", path.display()),
            ProcessStep::SealFds(SealFds { .. }) => "close the inherited descriptors the command must not have".into(),
            ProcessStep::DieWithParent => "die with the parent process".into(),
            ProcessStep::NewSession => "start a new session".into(),
            ProcessStep::DetachTerminal => "give up the caller's controlling terminal".into(),
            ProcessStep::StayInit => "stay as PID 1 until every process has ended (its end would kill the warden)".into(),
            ProcessStep::Exec(Exec { .. }) => "run the command".into(),
            ProcessStep::CallerSeccomp(CallerSeccomp { .. }) => "install the caller's seccomp filters".into(),
            ProcessStep::PidOneInit(PidOneInit { .. }) => "start the PID 1 reaper".into(),
            ProcessStep::HandInit => "hand PID 1 to the warden".into(),
            ProcessStep::LandlockScopes(LandlockScopes { .. }) => "apply the Landlock scopes".into(),
            ProcessStep::BlockOnFd(BlockOnFd { fd }) => format!("wait for data on fd {fd}"),
            ProcessStep::LockFile(LockFile { path }) => format!("lock {}", path.display()),
            ProcessStep::JoinCgroup(JoinCgroup { .. }) => "move the command's process into the sandbox's cgroups".into(),
        }
    }
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
        super::filter_profile::EXPLAINED_CALLS.join("/")
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

fn paths(v: &[PathBuf]) -> String {
    if v.is_empty() {
        return "nothing".into();
    }
    v.iter().map(|p| q(p)).collect::<Vec<_>>().join(", ")
}

/// bwrap mode's filter with `QWRAP_EXPLAIN`.
const TO_MONITOR: &str =
    "install the seccomp filter, handing every call that can be refused to the monitor (QWRAP_EXPLAIN)";

impl fmt::Display for ListenEgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ListenEgress { port } = self;
        write!(
            f,
            "socket(AF_INET, SOCK_STREAM); setsockopt(SO_REUSEADDR); bind(127.0.0.1:{port}); listen(); sendmsg(<warden>, SCM_RIGHTS): the warden serves it from outside"
        )
    }
}

impl fmt::Display for Chdir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Chdir { candidates } if candidates.len() == 1 => {
                write!(f, "chdir({})", q(&candidates[0]))
            }
            Chdir { candidates } => {
                let c: Vec<String> = candidates.iter().map(|p| q(p)).collect();
                write!(f, "chdir(the first of {})", c.join(", "))
            }
        }
    }
}

impl fmt::Display for DropCapabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DropCapabilities {
            keep,
            bounding,
            ambient,
        } = self;
        capabilities(keep, *bounding, *ambient, f)
    }
}

impl fmt::Display for Exec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Exec { argv, env, .. } = self;
        exec(argv, env, f)
    }
}

impl fmt::Display for JoinCgroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let JoinCgroup { groups } = self;
        let calls: Vec<String> = groups
            .iter()
            .map(|g| format!("open({}, O_WRONLY); write(\"0\")", q(&g.join("cgroup.procs"))))
            .collect();
        write!(f, "{}", calls.join("; "))
    }
}

impl fmt::Display for CallerSeccomp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CallerSeccomp { programs } = self;
        write!(
            f,
            "{} program(s) kept for the command (installed just before execve: prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER))",
            programs.len()
        )
    }
}

impl fmt::Display for PidOneInit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PidOneInit {
            forward_signals,
            wait_all,
        } = self;
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
}

impl fmt::Display for LandlockScopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LandlockScopes { abi } = self;
        write!(
            f,
            "landlock_create_ruleset(ABI {abi}, handled_access_fs=0, scoped=SIGNAL|ABSTRACT_UNIX_SOCKET); prctl(PR_SET_NO_NEW_PRIVS, 1); landlock_restrict_self()"
        )
    }
}

impl fmt::Display for BlockOnFd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let BlockOnFd { fd } = self;
        write!(f, "read({fd}, 1 byte)")
    }
}

impl fmt::Display for LockFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LockFile { path } = self;
        write!(f, "fcntl(open({}, O_RDONLY), F_SETLK, F_RDLCK)", q(path))
    }
}

impl fmt::Display for SeccompToMonitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SeccompToMonitor { layers } = self;
        to_monitor(f, *layers)
    }
}

impl fmt::Display for Landlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Landlock {
            abi,
            paths,
            fifo,
            scoped,
        } = self;
        landlock_text(*abi, paths, fifo, *scoped, f)
    }
}

impl fmt::Display for HandGitDirs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let HandGitDirs { dirs } = self;
        let names: Vec<String> = dirs.iter().map(|d| q(d)).collect();
        write!(
            f,
            "open(each of {}, O_RDONLY|O_DIRECTORY); sendmsg(warden, SCM_RIGHTS each); read(warden) = the warden has copied in the host's files (it then keeps git's allow-listed files in step both ways, under git's locks, with inotify)",
            names.join(", ")
        )
    }
}

impl fmt::Display for ReopenFd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ReopenFd { fd, path } = self;
        write!(
            f,
            "fcntl({fd}, F_GETFL); open({}, that access mode|O_NOCTTY); fstat both: the same device; dup2 onto fd {fd}",
            q(path)
        )
    }
}

impl fmt::Display for SealFds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SealFds { keep, closed } = self;
        let closed: Vec<String> = closed.iter().map(|(fd, what)| format!("{fd} ({what})")).collect();
        write!(
            f,
            "close_range(3, ~0U, CLOSE_RANGE_CLOEXEC); fcntl(F_SETFD, 0) on kept fds {keep:?}; closed at exec: [{}]",
            closed.join(", ")
        )
    }
}

impl fmt::Display for LandlockOnlyFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LandlockOnlyFilter { closed } = self;
        write!(
            f,
            "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {{socket({}) fails with EPERM; socketpair(AF_UNIX, SOCK_DGRAM) fails with EPERM; ioctl({}) fails with EPERM; chown, fchown, lchown, fchownat, the setxattr and removexattr calls, file_setattr, keyctl, add_key, request_key, the SysV IPC calls (shmget, shmat, shmctl, semget, semop, semtimedop, semctl, msgget, msgsnd, msgrcv, msgctl) and mq_open, mq_unlink, mq_timedsend, mq_timedreceive, mq_notify, mq_getsetattr fail with EPERM}})",
            if *closed { "every family" } else { "AF_UNIX" },
            super::filter_landlock::INODE_IOCTLS.map(|(_, n)| n).join("|")
        )
    }
}

fn ser_argv<S: serde::Serializer>(v: &[OsString], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|a| a.to_string_lossy()))
}

/// A program is shown by its size in instructions, not its bytes.
fn program_lengths<S: serde::Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|p| p.len() / 8))
}
