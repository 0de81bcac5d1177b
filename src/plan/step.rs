//! One setup step: the syscall it makes and why. Steps print in syscall form,
//! so `qwrap plan` reads like an strace of the setup. Each variant carries
//! a struct of its own, declared with its text and purpose in its family's
//! module (step_host.rs, step_namespace.rs, step_mount.rs, step_process.rs;
//! step_family.rs sees a step as its family's).

pub use super::step_args::{
    Ambient, Egress, Flags, IdMap, LimitWatch, Namespaces, OverlayPart, OverlayUpper, Role, Watched,
};
use super::step_host::*;
use super::step_mount::*;
use super::step_namespace::*;
use super::step_process::*;
use serde::Serialize;

pub use super::step_args::TreeId;

/// One setup step. The executor runs exactly these, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Step {
    CreateHostDir(CreateHostDir),
    /// Starts the warden (before the namespaces, so that it stays outside).
    StartWarden(StartWarden),
    /// `--review`, on the host: the run's layer (plan/review.rs), a lock
    /// the warden holds, the record `qwrap review` reads, the start.
    PrepareReview(PrepareReview),
    /// A cgroup of the sandbox's own, on the host: made new (one that is
    /// there already fails the step), each limit written to its file, in
    /// order, then the group the command joins made beneath it.
    MakeCgroup(MakeCgroup),
    /// The process that goes on to be the command (qwrap's own, or PID 1
    /// of a private PID namespace, just forked) moves into each of the
    /// sandbox's groups: all it forks is born there; the warden and the
    /// monitor, started before, stay out.
    JoinCgroup(JoinCgroup),
    /// `--isolation landlock`: a directory of the command's own on the host
    /// (its TMPDIR), made new (one that is there already fails the step).
    MakePrivateDir(MakePrivateDir),
    /// `--network proxied`: the proxy's listening socket, made in the
    /// sandbox's network namespace and handed to the warden, which serves
    /// it from the host's.
    ListenEgress(ListenEgress),
    /// unshare(2) of these namespaces, the mount namespace always (a PID
    /// namespace is entered by forking: `ForkIntoPidNamespace`).
    Unshare(Unshare),
    DenySetgroups,
    WriteIdMap(WriteIdMap),
    LoopbackUp,
    MakeMountsSlave,
    CloneTree(CloneTree),
    SetTreeAttr(SetTreeAttr),
    MountTmpfs(MountTmpfs),
    AttachTree(AttachTree),
    /// A directory or an empty file to mount on. On a filesystem the plan
    /// made (a fresh tmpfs), one `mkdir`/`mknod` that fails if anything is
    /// there; with `if_missing` (bwrap mode's destinations), left alone when
    /// it exists and made with its missing parents otherwise.
    MakeMountPoint(MakeMountPoint),
    Symlink(Symlink),
    /// Opens `ptmx` beside `target` in the sandbox's own devpts until its
    /// pty number `index` exists, so that the caller's terminal can be
    /// bound over that name (ttyname(3) inside then names the terminal as
    /// outside); the ptys below it are closed again, the one at `index`
    /// handed to the warden, which holds it (its name would vanish with
    /// the last descriptor of it).
    ClaimPty(ClaimPty),
    MountDevpts(MountDevpts),
    SetPathAttr(SetPathAttr),
    BindMount(BindMount),
    MakeTreePrivate(MakeTreePrivate),
    /// Legacy path: adds `set` to the mount at `target`, keeping its own
    /// flags (the kernel refuses to clear a flag locked in a user
    /// namespace), and with `recursive` to each mount the table lists under
    /// `source`, at the same place under `target` (a bind copies them).
    RemountTree(RemountTree),
    Remount(Remount),
    PivotRoot(PivotRoot),
    EnterRoot(EnterRoot),
    /// Every capability but `keep` leaves the effective, permitted,
    /// inheritable and ambient sets, and the bounding set with `bounding`;
    /// `ambient` says what the kept ones do there. `run`: nothing kept,
    /// bounding included.
    DropCapabilities(DropCapabilities),
    NoNewPrivs,
    Landlock(Landlock),
    /// The seccomp filter of one profile (filter_rules.rs; build.rs
    /// compiles each): with `warden`, calls aimed at other processes go to
    /// the warden, which gets the listener; `unscoped` (no Landlock signal
    /// scope): the signal calls, SIGIO owners and forks too (without a
    /// warden: SIGIO owners refused); `root`: extended attributes refused;
    /// `landlock_only` (no namespaces): mode bits and times to the warden
    /// too; `explain`: every call that can be refused to the warden (the
    /// keyring filter's and the second filter's folded in). Without a
    /// warden: bwrap mode's layers, or `run --pid private`'s, where no
    /// host process can be named from inside.
    Seccomp(super::filter_rules::Profile),
    /// `--isolation landlock`: Landlock over the host's own view, reads
    /// and writes both handled: `read` and `write` (reads too) granted
    /// beneath each path, `list` only listable (the levels on the way to
    /// a hidden or read-only path), `write_files` writable files (the
    /// devices every program writes); TCP refused where `no_tcp`.
    LandlockAllowList(super::AllowRules),
    /// `--isolation landlock`: a second filter for what the host shares
    /// without namespaces: no Unix socket can be made (none at all with
    /// the network closed), no keyring, SysV IPC or POSIX message queue
    /// call.
    LandlockOnlyFilter(LandlockOnlyFilter),
    /// A filter of its own refusing the keyring calls (keyctl, add_key,
    /// request_key: EPERM): the caller's keyrings out of reach, and no
    /// keyring made, which would count against the caller's key quota.
    RefuseKeyrings,
    /// The sandbox's own git dir levels (tmpfs, mounted), opened inside and
    /// handed to the warden, which fills them from the host's and keeps
    /// both in step; the setup waits for it to have filled them.
    HandGitDirs(HandGitDirs),
    /// The reaper (Landlock ABI ≥ 6): a Landlock domain that only scopes
    /// signals, a detached process in it that kills every process of the
    /// sandbox (whose ruleset nests inside) when the command exits.
    StartReaper,
    /// bwrap mode with `QWRAP_EXPLAIN`: the filter that hands the monitor
    /// every call that can be refused (its layers' refusals folded in with
    /// `layers`; without them no call is refused), and its listener.
    SeccompToMonitor(SeccompToMonitor),
    /// A detached tmpfs (mode 0000) holding an empty directory `d` and an
    /// empty file `f`, both mode 0000: what hidden paths are covered with.
    MakeHiddenSource(MakeHiddenSource),
    /// A clone of the hidden source's `d` or `f` over `target`, read-only.
    AttachHidden(AttachHidden),
    /// Opens `path` again with the access mode of `fd` and puts it at `fd`.
    ReopenFd(ReopenFd),
    /// Only 0-2 and `keep` reach the command; `closed` names what the
    /// inventory found and leaves behind, for the audit.
    SealFds(SealFds),
    /// prctl(PR_SET_PDEATHSIG, SIGKILL) now, and in the child of every
    /// fork after it that goes on with the setup (the monitor's, the PID
    /// namespace's, the session's, PID 1's): the sandbox dies with the
    /// process that started it.
    DieWithParent,
    NewSession,
    /// qwrap is PID 1 of its PID namespace (a container's first process),
    /// whose end kills every process in it, the warden before its last
    /// work (the git dirs' last copies, the leftovers, the lfs objects carried out, the
    /// private TMPDIR): it forks, and the parent stays as PID 1, passes
    /// signals on, reaps every process until none is left and exits as the
    /// child did. The child goes on.
    StayInit,
    /// No terminal on fds 0-2, yet the caller has a controlling terminal:
    /// given up (TIOCNOTTY), so that `/dev/tty` opens nothing and the
    /// command can neither signal the caller's jobs nor change the
    /// terminal through it; the command stays in the caller's process
    /// group (^C still reaches it).
    DetachTerminal,
    Exec(Exec),
    /// Fork into new namespaces (bwrap mode; `run --pid private`); the
    /// parent stays outside as the monitor that reports and relays the exit
    /// status.
    CloneMonitor(CloneMonitor),
    /// `setns(fd)`: joins a user or PID namespace handed over by fd.
    JoinNamespace(JoinNamespace),
    /// Forks so that the child lands in the PID namespace joined just
    /// before, or a new one (`unshare(CLONE_NEWPID)` first); the parent
    /// tells the monitor the child's pid, waits and exits as it does.
    ForkIntoPidNamespace(ForkIntoPidNamespace),
    /// Tells the monitor this process's pid: the namespaces are ready.
    NotifyMonitor,
    /// Fails when a new user namespace can still be made (and was).
    AssertUsernsDisabled,
    SetHostname(SetHostname),
    MountProc(MountProc),
    MountMqueue(MountMqueue),
    /// Makes an existing subtree read-only where it is, left alone where
    /// its mount is read-only already (`bubblewrap`: where access(W_OK)
    /// refuses, as bubblewrap asks): clone, set, attach; `legacy`: bound
    /// onto itself and remounted.
    ReadOnlyInPlace(ReadOnlyInPlace),
    CopyFdToFile(CopyFdToFile),
    Chmod(Chmod),
    /// The first of these directories that exists becomes the working
    /// directory, and the command's PWD.
    Chdir(Chdir),
    /// The caller's seccomp programs (raw `struct sock_filter` arrays, read
    /// from its fds while parsing), installed just before execve.
    CallerSeccomp(CallerSeccomp),
    /// PID 1 of a new PID namespace: fork the command, reap every child,
    /// exit as the command does (`wait_all`: once every process is gone,
    /// for --keep-background). `forward_signals`: what a process outside
    /// sends it goes on to the command.
    PidOneInit(PidOneInit),
    /// `run --pid private`: a pidfd of this process (the PID namespace's
    /// init-to-be) handed to the warden, which ends with it: the namespace
    /// and everything in it die with its PID 1.
    HandInit,
    /// `run --pid private`: a Landlock domain that only scopes signals and
    /// abstract sockets (one that handles filesystem access would forbid
    /// the mounts nested sandboxes make).
    LandlockScopes(LandlockScopes),
    BlockOnFd(BlockOnFd),
    /// Holds a read lock on a file for the command's life (the fd is left
    /// open across exec).
    LockFile(LockFile),
    /// Before the sandbox, on the host: cache directories that are missing,
    /// and each overlay layer's `upper` and `work` (made with their
    /// parents, mode 0700); then an exclusive lock on the layer slot, which
    /// the warden holds for the sandbox's life.
    PrepareCaches(PrepareCaches),
    /// Before the sandbox, on the host: a file written whole (through a
    /// temporary file and a rename) unless it is there already (its name
    /// is its content's hash): a shell start-up file without its
    /// credential assignments, to be shown read-only in its place.
    WriteHostFile(WriteHostFile),
    /// A detached overlay mount of host directories (resolved now, before
    /// anything covers them), attached later as a cloned tree is.
    MakeOverlay(MakeOverlay),
    /// The caches inside the home from one overlay of it (upper layer
    /// `upper`): each cache's subtree cloned from it into its tree. Where
    /// the kernel refuses that overlay (EINVAL: a host mount beneath the
    /// home, which an overlay in a user namespace may not hide), one
    /// overlay per cache over the same upper directories instead.
    HomeCaches(HomeCaches),
    /// Allows one user namespace below the sandbox's own: the one
    /// `NestUserNamespace` makes. Keeps /proc open for that step.
    DisableUserns,
    /// Enters a user namespace nested in the sandbox's own, with the same
    /// ids: the command holds no capability where the limit was set, so it
    /// cannot raise it again (bubblewrap's --disable-userns).
    NestUserNamespace(NestUserNamespace),
}

/// A seccomp step's profile in `plan --json`: its choices by name, the two
/// a mode turns on (`landlock_only`, `explain`) only when on (by hand,
/// since build.rs compiles filter_rules.rs with std alone).
impl Serialize for super::filter_rules::Profile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("Profile", 5)?;
        m.serialize_field("warden", &self.warden)?;
        m.serialize_field("unscoped", &self.unscoped)?;
        m.serialize_field("root", &self.root)?;
        for (name, on) in [("landlock_only", self.landlock_only), ("explain", self.explain)] {
            if on {
                m.serialize_field(name, &on)?;
            } else {
                m.skip_field(name)?;
            }
        }
        m.end()
    }
}
