//! The host's steps, made before anything is unshared: directories,
//! files, the caches' layers, the review layer, the cgroups, the warden.
//! Their types, the calls `qwrap plan` prints for each, and what each is
//! for.

use super::step_args::{DETACHED, DETACHED_END, Egress, LimitWatch, ONE_THREAD, q};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateHostDir {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
}

/// `--review`, on the host: the run's layer (plan/review.rs), a lock
/// the warden holds, the record `qwrap review` reads, the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrepareReview {
    #[serde(serialize_with = "crate::lossy::path")]
    pub layer: PathBuf,
    pub trees: usize,
    /// Made now, else an idle one (an earlier run left it empty).
    pub fresh: bool,
    /// The git indexes, linked as `base-N` where they are: a host index
    /// only refreshed since (the same entries) is no conflict at apply.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub bases: Vec<PathBuf>,
    #[serde(skip)]
    pub record: Vec<u8>,
}

/// A cgroup of the sandbox's own, on the host: made new (one that is
/// there already fails the step), each limit written to its file, in
/// order, then the group the command joins made beneath it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MakeCgroup {
    #[serde(serialize_with = "crate::lossy::path")]
    pub dir: PathBuf,
    /// (file, value).
    pub limits: Vec<(String, String)>,
}

/// `--isolation landlock`: a directory of the command's own on the host
/// (its TMPDIR), made new (one that is there already fails the step).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MakePrivateDir {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
}

/// Before the sandbox, on the host: cache directories that are missing,
/// and each overlay layer's `upper` and `work` (made with their
/// parents, mode 0700); then an exclusive lock on the layer slot, which
/// the warden holds for the sandbox's life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrepareCaches {
    #[serde(serialize_with = "crate::lossy::paths")]
    pub create: Vec<PathBuf>,
    #[serde(serialize_with = "crate::lossy::paths")]
    pub layers: Vec<PathBuf>,
    /// Layers overlaid now: marked, so that they are never bound bare
    /// again (an upper layer may hold whiteouts).
    #[serde(serialize_with = "crate::lossy::paths")]
    pub marked: Vec<PathBuf>,
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub lock: Option<PathBuf>,
}

/// Before the sandbox, on the host: a file written whole (through a
/// temporary file and a rename) unless it is there already (its name
/// is its content's hash): a shell start-up file without its
/// credential assignments, to be shown read-only in its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WriteHostFile {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    #[serde(skip)]
    pub text: String,
}

/// A host step, by reference: what its text and purpose match on.
#[derive(Debug, Clone, Copy)]
pub enum HostStep<'a> {
    CreateHostDir(&'a CreateHostDir),
    WriteHostFile(&'a WriteHostFile),
    PrepareCaches(&'a PrepareCaches),
    PrepareReview(&'a PrepareReview),
    StartWarden(&'a StartWarden),
    MakeCgroup(&'a MakeCgroup),
    MakePrivateDir(&'a MakePrivateDir),
}

impl fmt::Display for HostStep<'_> {
    /// The step's calls, as `qwrap plan` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HostStep::WriteHostFile(s) => s.fmt(f),
            HostStep::CreateHostDir(s) => s.fmt(f),
            HostStep::MakeCgroup(s) => s.fmt(f),
            HostStep::PrepareCaches(s) => s.fmt(f),
            HostStep::PrepareReview(s) => s.fmt(f),
            HostStep::MakePrivateDir(s) => s.fmt(f),
            HostStep::StartWarden(w) => warden_text(w, f),
        }
    }
}

impl HostStep<'_> {
    /// A short phrase naming what the step is for, used in error messages.
    pub fn purpose(&self) -> String {
        match *self {
            HostStep::MakePrivateDir(MakePrivateDir { path }) => {
                format!("make the command's own directory {}", path.display())
            }
            HostStep::PrepareCaches(PrepareCaches { .. }) => {
                "make the cache directories and claim the workspace's layer slot".into()
            }
            HostStep::WriteHostFile(WriteHostFile { path, .. }) => {
                format!("write {} before the sandbox starts", path.display())
            }
            HostStep::CreateHostDir(CreateHostDir { path }) => {
                format!("create {} before the sandbox starts", path.display())
            }
            HostStep::StartWarden { .. } => "start the warden outside the sandbox".into(),
            HostStep::PrepareReview(PrepareReview { layer, .. }) => {
                format!("make the review layer {} and hold its lock", layer.display())
            }
            HostStep::MakeCgroup(MakeCgroup { dir, .. }) => format!(
                "make the sandbox's cgroup in {}",
                dir.parent().unwrap_or(dir).display()
            ),
        }
    }
}

/// The warden's step: what it holds and does outside, in one aside.
fn warden_text(warden: &StartWarden, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let StartWarden {
        keep_background,
        egress,
        git,
        scoped,
        notes,
        remove,
        writable,
        watch,
        review,
        explain,
        limits,
        repos,
    } = warden;
    write!(f, "socketpair(AF_UNIX, SOCK_SEQPACKET); getpid() = the command; ")?;
    if *notes || explain.as_ref().is_some_and(|e| e.say) {
        write!(f, "fcntl(stderr, F_DUPFD_CLOEXEC) for its notes; ")?;
    }
    if let Some(d) = explain.as_ref().and_then(|e| e.denials.as_ref()) {
        write!(f, "open({}, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600); ", q(d))?;
    }
    if let Some(l) = egress.as_ref().and_then(|e| e.log.as_ref()) {
        write!(f, "open({}, O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, 0600); ", q(l))?;
    }
    write!(
        f,
        "{ONE_THREAD}{DETACHED}the warden{DETACHED_END}, so that it is no child of the command (outside the sandbox; {}",
        match (keep_background, scoped) {
            (true, _) => "leaves the command's leftovers running",
            (false, true) =>
                "when the command exits, waits (poll, at most 2 s) for the reaper's kill(-1) to empty the sandbox",
            (false, false) =>
                "when the command exits, holds every fork and kills every process whose user namespace is the sandbox's or one made inside it (NS_GET_PARENT), until none is left",
        }
    )?;
    write!(
        f,
        "; holds the cache layer slot's lock, when there is one, through fcntl(F_DUPFD_CLOEXEC), and lets it go once the command and its leftovers are gone"
    )?;
    if let Some(e) = egress {
        write!(
            f,
            "; serves the egress proxy to {} listed destinations",
            e.allow.0.len()
        )?;
    }
    if let Some(dir) = remove {
        write!(f, "; removes {} once the sandbox is gone", q(dir))?;
    }
    if !writable.is_empty() {
        let names: Vec<String> = writable.iter().map(|p| q(p)).collect();
        write!(
            f,
            "; makes the trapped chmod and utimensat calls itself, for a file beneath {} that the command's user owns (read from /proc/PID/mem, opened O_PATH, judged by its /proc/self/fd link), EPERM elsewhere",
            names.join(", ")
        )?;
    }
    if let Some(e) = explain {
        explain_text(e, f)?;
    }
    if let Some(l) = limits {
        limits_text(l, f)?;
    }
    git_text(git, repos.as_deref(), f)?;
    at_exit_text(watch, review.as_deref(), f)?;
    write!(f, ")")
}

/// What the warden does for the limits, in its step's aside.
fn limits_text(l: &super::step_args::LimitWatch, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if let Some(ms) = l.time_ms {
        write!(
            f,
            "; {ms} ms after it starts (the time limit): SIGTERM to every process of the sandbox ({}), SIGKILL to each {} s later",
            if l.groups.is_empty() {
                "found as the leftovers are"
            } else {
                "its group's cgroup.procs"
            },
            super::limits::GRACE_S
        )?;
    }
    if l.groups.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = l.groups.iter().map(|g| q(g)).collect();
    if let (Some(m), false) = (&l.memory, l.v2) {
        write!(
            f,
            "; once the command runs, eventfd() and write(cgroup.event_control, \"EVENTFD FD\") of {}'s memory.oom_control: at the first OOM kill in the group it kills every process in it (cgroup v1 has no memory.oom.group)",
            q(&m.group)
        )?;
    }
    write!(
        f,
        "; when the sandbox ends, {} {}, waits for it to empty and removes it (rmdir), then reads {}whether a limit was reached{}",
        if l.v2 {
            "write(cgroup.kill, \"1\") of"
        } else {
            "SIGKILL to every pid in cgroup.procs of"
        },
        names.join(", "),
        match (l.v2, l.memory.is_some(), l.processes.is_some()) {
            (_, false, false) => "",
            (true, true, false) => "memory.events and memory.peak: ",
            (true, false, true) => "pids.events: ",
            (true, true, true) => "memory.events, memory.peak and pids.events: ",
            (false, true, false) => "memory.oom_control and memory.max_usage_in_bytes: ",
            (false, false, true) => "pids.events: ",
            (false, true, true) => "memory.oom_control, memory.max_usage_in_bytes and pids.events: ",
        },
        if l.say { ", and says so on stderr" } else { "" }
    )
}

/// The warden's git jobs: the git dirs kept in step, the repositories
/// looked for at the end.
fn git_text(git: &[std::path::PathBuf], repos: Option<&RepoScan>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if !git.is_empty() {
        let names: Vec<String> = git.iter().map(|p| q(p)).collect();
        write!(
            f,
            "; keeps the sandbox's own {} in step with the host's for git's allow-listed files, from open(each, O_RDONLY|O_DIRECTORY) and inotify_init1(), reporting on fcntl(2, F_DUPFD_CLOEXEC): refs, reflogs, the index and state files vetted on their way out; objects new inside brought over by host git as a push's are (pack-objects from a private quarantine into unpack-objects --strict, index-pack --strict --stdin --fix-thin)",
            names.join(", ")
        )?;
    }
    if let Some(r) = repos {
        let names: Vec<String> = r.roots.iter().map(|p| q(p)).collect();
        write!(
            f,
            "; when the sandbox ends, walks {} (getdents, never through a link) and names each .git not among the {} there at the start",
            names.join(", "),
            r.known.len()
        )?;
        if !r.absent.is_empty() {
            let absent: Vec<String> = r.absent.iter().map(|p| q(p)).collect();
            write!(
                f,
                "; moves aside each of {} (what host git would read as config or hooks, missing at the start) that is there then",
                absent.join(", ")
            )?;
        }
        if !r.ways.is_empty() {
            let ways: Vec<String> = r.ways.iter().map(|p| q(p)).collect();
            write!(
                f,
                "; realpath()s each of {} (what host git reads, through a link) now and at the end, and moves aside the link on the way where it leads elsewhere then",
                ways.join(", ")
            )?;
        }
        if !r.trusted.is_empty() {
            let trusted: Vec<String> = r.trusted.iter().map(|p| q(p)).collect();
            write!(
                f,
                "; lstat()s each of {} (what host git reads as config or hooks) now and at the end, and moves aside each that names another file then",
                trusted.join(", ")
            )?;
        }
        if !r.lfs.is_empty() {
            let lfs: Vec<String> = r.lfs.iter().map(|p| q(p)).collect();
            write!(
                f,
                "; the sandbox's own lfs/objects/XX/YY/OID that hash (SHA-256) to their name are copied into git-lfs's {} (openat O_NOFOLLOW, a new file O_EXCL, renameat2 RENAME_NOREPLACE), each time the warden copies git's files and when the sandbox ends",
                lfs.join(", ")
            )?;
        }
    }
    Ok(())
}

/// What the warden does for `--explain`, in its step's aside.
fn explain_text(e: &super::explain::Explain, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        "; with --explain answers every trapped call as the filter without it would (the errno of {}, or SECCOMP_USER_NOTIF_FLAG_CONTINUE: the kernel runs the call and enforces), judging first from its arguments (the path read from /proc/PID/mem, against /proc/PID/cwd or /proc/PID/fd/N) whether it will be refused: a write outside {} writable paths (a read-only mount, asked through /proc/PID/root), a read of {} hidden paths{}, a connect to {} masked sockets; {}",
        if e.keyrings || e.second.is_some() {
            "the rules, the keyring calls and the second filter's"
        } else {
            "the rules"
        },
        e.writable.len(),
        e.hidden.len(),
        if e.view.is_some() {
            " or of a host path outside the minimal view"
        } else {
            ""
        },
        e.sockets.len(),
        match (e.say, e.denials.is_some()) {
            (true, true) => "writes each refusal to the denials file and says them on stderr at exit",
            (true, false) => "says the refusals on stderr at exit",
            _ => "writes each refusal to the denials file",
        }
    )
}

/// What the warden does when the command exits (the agent files it
/// watches, the review layer), in its step's aside.
fn at_exit_text(
    watch: &[std::path::PathBuf],
    review: Option<&std::path::Path>,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    if !watch.is_empty() {
        let names: Vec<String> = watch.iter().map(|p| q(p)).collect();
        write!(
            f,
            "; when the command exits, names on stderr each of {} that is there (made inside)",
            names.join(", ")
        )?;
    }
    if let Some(l) = review {
        write!(
            f,
            "; when the command exits, writes out the layer {} with syncfs and names it on stderr, or where every upper directory is empty leaves it idle for the next run",
            q(l)
        )?;
    }
    Ok(())
}

/// `Step::PrepareReview`'s calls.
fn prepare_review(
    layer: &std::path::Path,
    trees: usize,
    fresh: bool,
    bases: &[std::path::PathBuf],
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let set = layer.parent().unwrap_or(layer);
    let mut calls = if fresh {
        vec![
            format!("mkdir({}, 0700) with missing parents", q(set)),
            format!("mkdir({}, 0700) (EEXIST: another run took this id)", q(layer)),
        ]
    } else {
        vec![format!(
            "the idle layer {} reused (its directories there, left empty by an earlier run)",
            q(layer)
        )]
    };
    for n in (0..trees).filter(|_| fresh) {
        let (upper, work) = super::review::tree_dirs(layer, n);
        calls.push(format!(
            "mkdir({}, 0700); mkdir({}, 0700); mkdir({}, 0700)",
            q(&layer.join(n.to_string())),
            q(&upper),
            q(&work)
        ));
    }
    for (n, b) in bases.iter().enumerate() {
        calls.push(format!(
            "link({}, {}) where it is there",
            q(b),
            q(&layer.join(format!("base-{n}")))
        ));
    }
    calls.push(format!(
        "open({}, O_RDWR|O_CREAT|O_CLOEXEC, 0600) = <lock>; flock(<lock>, LOCK_EX|LOCK_NB) (EWOULDBLOCK: another run took it); pwrite(<lock>, getpid() ten digits wide); fstat(<lock>) = the run's start, its ctime; open({}, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600), write() the trees, the command and the start",
        q(&layer.join("lock")),
        q(&layer.join("info"))
    ));
    write!(f, "{} on the host", calls.join("; "))
}

impl fmt::Display for WriteHostFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let WriteHostFile { path, text } = self;
        let mut temporary = path.clone().into_os_string();
        temporary.push(".<getpid()>");
        write!(
            f,
            "mkdir(its directory, 0700); unless open({}) and read() find it already: open({}, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600), write() {} bytes, rename(it, {}) on the host",
            q(path),
            q(std::path::Path::new(&temporary)),
            text.len(),
            q(path)
        )
    }
}

impl fmt::Display for CreateHostDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CreateHostDir { path } = self;
        write!(f, "mkdir({}, 0755) on the host", q(path))
    }
}

impl fmt::Display for MakeCgroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MakeCgroup { dir, limits } = self;
        write!(f, "mkdir({}, 0755)", q(dir))?;
        for (file, value) in limits {
            write!(f, "; open({}, O_WRONLY); write({value:?})", q(&dir.join(file)))?;
        }
        write!(
            f,
            "; mkdir({}, 0755) on the host",
            q(&dir.join(super::limits::LEAF))
        )
    }
}

impl fmt::Display for PrepareCaches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PrepareCaches {
            create,
            layers,
            marked,
            lock,
        } = self;
        let mut calls: Vec<String> = create.iter().map(|d| format!("mkdir({}, 0700)", q(d))).collect();
        for l in layers {
            calls.push(format!(
                "mkdir({}, 0700); mkdir({}, 0700)",
                q(&l.join("upper")),
                q(&l.join("work"))
            ));
        }
        for m in marked {
            calls.push(format!("open({}, O_WRONLY|O_CREAT|O_CLOEXEC, 0600)", q(m)));
        }
        if let Some(l) = lock {
            calls.push(format!(
                        "open({}, O_RDWR|O_CREAT|O_CLOEXEC, 0600) = <lock>; flock(<lock>, LOCK_EX|LOCK_NB); pwrite(<lock>, getpid() ten digits wide)",
                        q(l)
                    ));
        }
        write!(f, "{} on the host (with missing parents)", calls.join("; "))
    }
}

impl fmt::Display for PrepareReview {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PrepareReview {
            layer,
            trees,
            fresh,
            bases,
            ..
        } = self;
        prepare_review(layer, *trees, *fresh, bases, f)
    }
}

impl fmt::Display for MakePrivateDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MakePrivateDir { path } = self;
        write!(
            f,
            "mkdir({}, 0700) on the host: a new directory (one already there fails the step)",
            q(path)
        )
    }
}

/// What the warden is started with: the executor hands it over as it is
/// (supervise/warden.rs takes it by reference).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartWarden {
    pub keep_background: bool,
    /// `--network proxied`: the proxy the warden serves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<Box<Egress>>,
    /// The host git dirs (and objects/info) whose sandbox-own copies the
    /// warden keeps in step (supervise/git_sync.rs), in the order
    /// `HandGitDirs` sends them.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub git: Vec<PathBuf>,
    /// Landlock's signal scope is there: the warden and the sandbox
    /// share a signal domain, and the warden's kill(-1) ends the
    /// sandbox (otherwise forks go through the warden and it walks /proc).
    pub scoped: bool,
    /// The warden may say on qwrap's stderr what the command meets and
    /// how to get past it (a user namespace it cannot map).
    pub notes: bool,
    /// `--isolation landlock`: the command's own temporary directory,
    /// removed once the sandbox is gone.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::lossy::opt_path"
    )]
    pub remove: Option<PathBuf>,
    /// `--isolation landlock`: where the warden changes a file's mode
    /// bits and times on the command's behalf (where Landlock lets it
    /// write).
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "crate::lossy::paths")]
    pub writable: Vec<PathBuf>,
    /// Agent and editor files missing at the start: those there at the
    /// command's exit are named on qwrap's stderr.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "crate::lossy::paths")]
    pub watch: Vec<PathBuf>,
    /// `--review`: the run's layer, named at exit (idle if empty).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::lossy::opt_path"
    )]
    pub review: Option<PathBuf>,
    /// `--explain`, `--denials`: what the warden judges the trapped
    /// calls by, and where it says the refusals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Box<super::explain::Explain>>,
    /// The sandbox's limits: its groups, emptied and removed at its
    /// end; the time limit; what it says at a limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitWatch>,
    /// The repositories below the writable roots, looked for again
    /// when the sandbox ends: a new one is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repos: Option<Box<RepoScan>>,
}

/// The writable roots walked for `.git`s when the sandbox ends, and those
/// there when it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoScan {
    #[serde(serialize_with = "crate::lossy::paths")]
    pub roots: Vec<PathBuf>,
    #[serde(serialize_with = "crate::lossy::paths")]
    pub known: Vec<PathBuf>,
    /// git-lfs's stores (the host's, read-only inside): where the objects
    /// made in the sandbox's own store are carried.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub lfs: Vec<PathBuf>,
    /// What host git would read as config or hooks, missing at the start
    /// (an included file, `core.hooksPath`, `core.excludesFile`): moved
    /// aside at the end where the command made it.
    #[serde(serialize_with = "crate::lossy::paths", skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<PathBuf>,
    /// What host git reads as config or hooks outside a git dir, there at
    /// the start: moved aside at the end where the path names another file
    /// then (its parent renamed, the path made again).
    #[serde(serialize_with = "crate::lossy::paths", skip_serializing_if = "Vec::is_empty")]
    pub trusted: Vec<PathBuf>,
    /// Those paths as config spells them, through a link: resolved again
    /// at the end, held aside where they lead elsewhere then.
    #[serde(serialize_with = "crate::lossy::paths", skip_serializing_if = "Vec::is_empty")]
    pub ways: Vec<PathBuf>,
    /// The walk at the start stopped early: a repository it did not find
    /// may lie where it would have looked, and is the command's only where
    /// it or what host git takes from it changed since.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}
