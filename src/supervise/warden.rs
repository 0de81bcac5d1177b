//! The warden: a small process outside the sandbox, started before the
//! namespaces and detached, so that the command (which keeps qwrap's PID)
//! has exactly the children it makes. It answers the filter's
//! notifications (calls.rs, metadata.rs; explain.rs with --explain),
//! keeps the git dirs in step, serves the egress proxy, watches the limits
//! (limits.rs) and, when the command exits, ends what it left behind
//! (leftovers.rs, reaper.rs; unless --keep-background), looks at the
//! repositories and lfs stores (planted.rs), then exits itself.

use crate::egress::proxy;
use crate::plan::{Egress, LimitWatch};
use crate::sys::{self, Notification, kernel as k};
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::io::Errno;
use std::path::{Path, PathBuf};

use super::at_exit::{AtExit, Repos};
use super::calls::Sandbox;
use super::explain::{Explaining, Recorder};
use super::explain_judge::{Base, Judge};
use super::git_sync::{GitSync, Kind, Pair};
use super::handover::{self, Handed, WardenLink};
use super::leftovers::Emptying;
use super::limits::Limits;
use std::sync::{Arc, Mutex};

/// What the warden is asked to do besides answering the filter.
pub(crate) struct Orders<'a> {
    pub keep_background: bool,
    /// The proxy to serve once its socket is handed over.
    pub egress: Option<&'a Egress>,
    /// The host git dir levels whose sandbox-own copies it keeps in step.
    pub git: &'a [PathBuf],
    pub scoped: bool,
    pub notes: bool,
    /// `--isolation landlock`: the command's own directory, removed once
    /// the sandbox is gone.
    pub remove: Option<&'a Path>,
    /// `--isolation landlock`: where it changes a file's mode bits and
    /// times on the command's behalf (metadata.rs).
    pub writable: &'a [PathBuf],
    /// Files missing at the start, named at exit when the command made
    /// them (at_exit.rs).
    pub watch: &'a [PathBuf],
    /// `--review`: the run's layer, written out and named at exit (left
    /// idle for the next run where it is empty).
    pub review: Option<&'a Path>,
    /// The sandbox's limits (limits.rs).
    pub limits: Option<&'a LimitWatch>,
    /// `--explain`, `--denials`: the calls it judges and where it says
    /// the refusals (explain.rs).
    pub explain: Option<&'a crate::plan::explain::Explain>,
    /// The roots looked at for repositories made inside (planted.rs).
    pub repos: Option<&'a crate::plan::RepoScan>,
}

/// Starts the warden. `hold`: locks kept for the sandbox's life (the
/// warden outlives it).
pub(crate) fn start(orders: Orders<'_>, hold: &[OwnedFd]) -> Result<WardenLink, Errno> {
    let Orders {
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
    } = orders;
    let explain = explain.cloned();
    let ending = Ending::new(remove);
    let repos = repos.map(|r| Repos::new(r, !keep_background));
    let limits = limits.cloned();
    // The limits' lines go to qwrap's stderr too, kept as the reports' are:
    // not with --keep-background, where it would hold a caller's pipe open.
    let says_limits = limits.as_ref().is_some_and(|l| l.say) && !keep_background;
    let (ours, theirs) = k::seqpacket_pair()?;
    let command = k::getpid();
    // What the warden says (the git copies it could not make, the proxy's
    // refusals) goes to qwrap's stderr, kept only while the command's exit
    // ends the warden: with --keep-background it would hold a caller's
    // pipe open.
    let at_exit_says = !keep_background && (!watch.is_empty() || review.is_some());
    let says = !git.is_empty() || egress.is_some_and(|e| e.say) || at_exit_says;
    let reports = !keep_background && says;
    // One descriptor of it for everything the warden says; its copies are
    // made in the warden, not on the command's way to exec.
    let stderr = (reports || notes || says_limits)
        .then(|| k::fcntl_dupfd_cloexec(rustix::stdio::stderr(), 3).ok())
        .flatten();
    // --explain's lines at exit, on a copy of their own.
    let explain_say = explain
        .as_ref()
        .filter(|e| e.say)
        .and_then(|_| k::fcntl_dupfd_cloexec(rustix::stdio::stderr(), 3).ok());
    // The files it writes are opened here, where the caller's rights apply.
    let denials = opened(
        explain.as_ref().and_then(|e| e.denials.as_deref()),
        sys::open_truncate,
    )?;
    let log = opened(egress.and_then(|e| e.log.as_deref()), k::open_append)?;
    // The warden's own references to the locks: the last ones once the
    // command has replaced qwrap (close-on-exec), dropped when it exits.
    let held: Vec<OwnedFd> = hold
        .iter()
        .map(|h| k::fcntl_dupfd_cloexec(h, 3))
        .collect::<Result<_, _>>()?;
    // The warden: a process of its own, no child of the command. What it
    // takes is moved into it; this process's copies close when the closure
    // is dropped here.
    let (warden, _) = sys::spawn_detached(move || {
        let mut keep = vec![theirs.as_raw_fd()];
        keep.extend(stderr.as_ref().map(|r| r.as_raw_fd()));
        keep.extend(held.iter().map(|h| h.as_raw_fd()));
        keep.extend(log.as_ref().map(|l| l.as_raw_fd()));
        keep.extend(explain_say.as_ref().map(|l| l.as_raw_fd()));
        keep.extend(denials.as_ref().map(|l| l.as_raw_fd()));
        keep.extend(repos.as_ref().and_then(|r| r.say.as_ref()).map(|l| l.as_raw_fd()));
        sys::detach_warden(&keep);
        // A session of its own: where the scheduler groups by session
        // (autogroup), the warden's share of the CPU is not split with a
        // command that forks without end, which it may have to outpace.
        let _ = k::setsid();
        let notes = stderr.as_ref().filter(|_| notes).and_then(|r| r.try_clone().ok());
        let lfs = repos.as_ref().map(|r| r.scan.lfs.clone()).unwrap_or_default();
        let out = stderr
            .as_ref()
            .filter(|_| at_exit_says)
            .and_then(|r| r.try_clone().ok());
        let at_exit = AtExit::new(repos, watch, review, out);
        let said = stderr
            .as_ref()
            .filter(|_| says_limits)
            .and_then(|r| r.try_clone().ok());
        let report = stderr.filter(|_| reports);
        let explaining = explain.map(|orders| Explaining {
            judge: Judge::new(orders),
            seen: Arc::new(Mutex::new(Recorder::new(explain_say, denials))),
        });
        let seen = explaining.as_ref().map(|e| Arc::clone(&e.seen));
        let mut limits = limits.map(|l| Limits::new(l, said, seen.clone()));
        let proxy = egress.map(|e| proxy_config(e, log, report.as_ref(), explaining.as_ref()));
        let reaper = if scoped { Emptying::Scoped } else { Emptying::Scan };
        let duties = Duties {
            link: theirs,
            command,
            keep_background,
            report,
            proxy,
            held,
            reaper,
            git: git.to_vec(),
            lfs,
            notes,
            writable: writable.to_vec(),
            explaining,
        };
        let code = run(duties, &at_exit, limits.as_mut());
        // The sandbox's groups emptied, what was reached said, the groups
        // removed: before the copy of stderr closes, so that the caller
        // reads the line before its end.
        if let Some(l) = &mut limits {
            l.end();
        }
        // --explain: said once nothing more can be refused, a limit
        // reached included.
        if let Some(Ok(mut s)) = seen.as_deref().map(Mutex::lock) {
            s.finish();
        }
        ending.end();
        sys::exit_now(code)
    })?;
    Ok(WardenLink::new(ours, warden))
}

/// What the warden does once the sandbox is gone (its leftovers too, or,
/// kept, done with): the command's own directory (`--isolation
/// landlock`'s TMPDIR) removed, the repositories it made named.
struct Ending {
    remove: Option<PathBuf>,
}

impl Ending {
    fn new(remove: Option<&Path>) -> Ending {
        Ending {
            remove: remove.map(Path::to_path_buf),
        }
    }

    fn end(&self) {
        if let Some(dir) = &self.remove {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// What the warden was given to do, moved into its process.
struct Duties {
    /// Its end of the hand-over socket.
    link: OwnedFd,
    command: rustix::process::Pid,
    keep_background: bool,
    /// Where the git dirs' refusals and conflicts are said.
    report: Option<OwnedFd>,
    proxy: Option<proxy::Config>,
    /// Locks and the terminal, released when the sandbox has ended.
    held: Vec<OwnedFd>,
    reaper: Emptying,
    /// The host's git dirs whose own levels are handed over.
    git: Vec<PathBuf>,
    /// git-lfs's stores (the host's), where new objects are carried.
    lfs: Vec<PathBuf>,
    /// Where a note about a trapped call goes (once).
    notes: Option<OwnedFd>,
    /// `--isolation landlock`: where mode bits and times may change.
    writable: Vec<PathBuf>,
    explaining: Option<Explaining>,
}

fn run(duties: Duties, at_exit: &AtExit, mut limits: Option<&mut Limits>) -> i32 {
    let Duties {
        link,
        command,
        keep_background,
        mut report,
        mut proxy,
        mut held,
        reaper,
        git,
        lfs,
        mut notes,
        writable,
        mut explaining,
    } = duties;
    let (mut own_git, mut sync): (Vec<OwnedFd>, Option<GitSync>) = (Vec::new(), None);
    let Ok(pidfd) = k::pidfd_open(command, rustix::process::PidfdFlags::empty()) else {
        at_exit.command_done();
        return 1;
    };
    // The egress proxy's socket comes first, when there is one; then the
    // seccomp listener.
    let (mut serving, mut reaper_pid): (Option<std::sync::Arc<proxy::Config>>, _) = (None, None);
    let listener = loop {
        match handover::receive(&link) {
            Some(Handed::Reaper(pidfd)) => reaper_pid = pidfd_pid(&pidfd),
            Some(Handed::Terminal(pty)) => held.push(pty),
            Some(Handed::GitDir(dir)) => {
                own_git.push(dir);
                if own_git.len() == git.len() {
                    sync = git_sync(&git, own_git.drain(..), report.take(), &lfs);
                    handover::git_dirs_filled(&link);
                }
            }
            Some(Handed::Egress(socket)) => serving = proxy.take().map(|config| serve_egress(socket, config)),
            // A private PID namespace: no listener; the sandbox lives as
            // long as its PID 1.
            Some(Handed::Init(init)) => {
                if let Some(l) = limits.as_deref_mut() {
                    l.arm();
                }
                let code = watch(&init, sync.as_mut(), limits);
                held.clear();
                return code.unwrap_or_else(|| finish(sync.as_mut(), serving.as_deref(), at_exit));
            }
            Some(Handed::Listener(l)) => break l,
            // qwrap failed before the command ran: nothing to do but take
            // away its empty layer.
            None => {
                at_exit.setup_failed();
                return 0;
            }
        }
    };
    let Some(mut sandbox) = Sandbox::of(command.as_raw_nonzero().get()) else {
        // The command is gone already (a quick one): the end as after its
        // exit.
        held.clear();
        finish(sync.as_mut(), serving.as_deref(), at_exit);
        return 1;
    };
    serving_starts(
        &listener,
        &mut sandbox,
        reaper_pid,
        explaining.is_some(),
        limits.as_deref_mut(),
    );
    let mut command_alive = true;
    loop {
        let Some(ready) = poll_once(
            &listener,
            sync.as_ref(),
            limits.as_deref(),
            command_alive.then_some(&pidfd),
        ) else {
            return 1;
        };
        let (listener_ready, git_ready, oom_ready, exited) =
            (ready.listener, ready.git, ready.oom, ready.exited);
        if let Some(s) = &mut sync {
            s.tend(git_ready);
        }
        if let Some(l) = limits.as_deref_mut() {
            l.tend(oom_ready, &mut |sig| every_process(&sandbox, sig));
        }
        if exited {
            command_alive = false;
            // At once: every process left is killed before anything else.
            if !keep_background {
                reaper.kill_all(&sandbox, &listener);
                // The cache layer slot is free for the workspace's next
                // sandbox as soon as nothing of this one can write to it.
                held.clear();
                return finish(sync.as_mut(), serving.as_deref(), at_exit);
            }
        }
        if listener_ready.contains(PollFlags::IN) {
            if let Ok(n) = sys::notif_recv(listener.as_fd()) {
                notification(
                    &listener,
                    &sandbox,
                    &n,
                    explaining.as_mut(),
                    &mut notes,
                    &writable,
                );
            }
        } else if listener_ready.intersects(PollFlags::HUP | PollFlags::ERR) {
            // No process holds the filter any more: the command and all
            // it started are gone (with --keep-background, the last of the
            // leftovers too).
            return finish(sync.as_mut(), serving.as_deref(), at_exit);
        }
    }
}

/// What one poll found ready.
struct Ready {
    listener: PollFlags,
    git: bool,
    oom: bool,
    exited: bool,
}

/// Waits for the listener, the git copies' inotify, the memory limit's
/// event and the command's end (`alive`: while it runs), at most until
/// the next retry or limit is due; None where poll fails.
fn poll_once(
    listener: &OwnedFd,
    sync: Option<&GitSync>,
    limits: Option<&Limits>,
    alive: Option<&OwnedFd>,
) -> Option<Ready> {
    let inotify = sync.map(GitSync::fd);
    let oom = limits.and_then(Limits::fd);
    let mut fds: Vec<PollFd> = [Some(listener.as_fd()), inotify, oom, alive.map(|a| a.as_fd())]
        .into_iter()
        .flatten()
        .map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN))
        .collect();
    let timeout = sooner(sync.and_then(GitSync::retry), limits);
    match rustix::event::poll(&mut fds, timeout.as_ref()) {
        Ok(_) | Err(Errno::INTR) => {}
        Err(_) => return None,
    }
    Some(Ready {
        listener: fds[0].revents(),
        git: sync.is_some() && !fds[1].revents().is_empty(),
        oom: oom.is_some() && !fds[1 + usize::from(sync.is_some())].revents().is_empty(),
        exited: alive.is_some() && !fds[fds.len() - 1].revents().is_empty(),
    })
}

/// The listener in hand, the sandbox known: the reaper spared from the
/// kills, the limits armed; with --explain, which hands the warden every
/// open, each round trip switched to it at once where the kernel can
/// (Linux 6.6), not when the scheduler finds it a CPU on a busy machine.
fn serving_starts(
    listener: &OwnedFd,
    sandbox: &mut Sandbox,
    reaper: Option<i32>,
    explaining: bool,
    limits: Option<&mut Limits>,
) {
    if explaining {
        let _ = sys::notif_sync_wake_up(listener.as_fd());
    }
    sandbox.spare = reaper;
    if let Some(l) = limits {
        l.spare(reaper);
        l.arm();
    }
}

/// A file the warden writes, opened where there is one to open.
fn opened(
    path: Option<&Path>,
    open: fn(&Path) -> std::io::Result<std::fs::File>,
) -> Result<Option<std::fs::File>, Errno> {
    path.map(|p| open(p).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO)))
        .transpose()
}

/// The git dirs' copies kept in step, once every own dir is handed over:
/// each host level beside the sandbox's own, lfs carried to the host's.
fn git_sync(
    git: &[std::path::PathBuf],
    own: impl Iterator<Item = OwnedFd>,
    report: Option<OwnedFd>,
    lfs: &[std::path::PathBuf],
) -> Option<GitSync> {
    let pairs: Vec<Pair> = git
        .iter()
        .zip(own)
        .filter_map(|(host, own)| {
            let kind = if host.ends_with("objects") {
                Kind::Objects
            } else {
                Kind::Top
            };
            Pair::new(host.clone(), own, kind).ok()
        })
        .collect();
    let mut sync = GitSync::new(pairs, report).ok()?;
    sync.carry_lfs_to(lfs);
    Some(sync)
}

/// The egress proxy served from a thread of the warden's on the socket
/// the sandbox handed over.
fn serve_egress(socket: OwnedFd, config: proxy::Config) -> std::sync::Arc<proxy::Config> {
    let listener = std::net::TcpListener::from(socket);
    let config = std::sync::Arc::new(config);
    let serving = std::sync::Arc::clone(&config);
    let _ = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || proxy::serve(listener, config));
    serving
}

/// One trapped call answered: with --explain judged first (refused by the
/// rules, or let go on and predicted), and recorded where refused; the
/// note on a nested user namespace; a mode or times call made here; the
/// rest refused where aimed outside, else let go on.
fn notification(
    listener: &OwnedFd,
    sandbox: &Sandbox,
    n: &Notification,
    mut explaining: Option<&mut Explaining>,
    notes: &mut Option<OwnedFd>,
    writable: &[PathBuf],
) {
    if let Some(e) = explaining.as_deref_mut() {
        match e.judge.base(n) {
            // Refused by the rules (and the filters folded in): with their
            // errno, and said.
            Base::Errno(errno) => {
                e.record(n.pid, e.judge.filtered(n, errno));
                let _ = sys::notif_send(listener.as_fd(), n.id, Some(errno));
                return;
            }
            // Let go on as without --explain: the kernel runs it and
            // refuses what it refuses; judged first.
            Base::Allow => {
                if let Some(r) = e.judge.predict(n) {
                    e.record(n.pid, r);
                }
                // A signal Landlock's scope will refuse: said here.
                if e.judge.is_signal(n)
                    && let Some(errno) = sandbox.refuses(n)
                {
                    e.record(n.pid, e.judge.scoped(n, errno));
                }
                let _ = sys::notif_send(listener.as_fd(), n.id, None);
                return;
            }
            Base::Notify => {}
        }
    }
    if super::calls::makes_user_namespace(n)
        && let Some(fd) = notes.take()
    {
        let _ = k::write(&fd, NESTED_NOTE.as_bytes());
    }
    match super::metadata::handle(n, writable) {
        // A mode or times call (--isolation landlock): made here, or
        // refused, and answered with its result.
        Some(result) => {
            let _ = sys::notif_answer(listener.as_fd(), n.id, result.map_err(|e| e.raw_os_error()));
        }
        None => {
            if let Some(errno) = answer(listener, sandbox, n)
                && let Some(e) = &explaining
            {
                e.record(n.pid, e.judge.outside(n, errno));
            }
        }
    }
}

/// Keeps the git copies in step, and the limits, until the process behind
/// `pidfd` (PID 1 of the sandbox's own PID namespace) exits; Some(exit
/// code) when polling fails.
fn watch(pidfd: &OwnedFd, mut sync: Option<&mut GitSync>, mut limits: Option<&mut Limits>) -> Option<i32> {
    // Every process of the sandbox, where its limits have no group to list
    // them: PID 1 and what descends from it.
    let sandbox = pidfd_pid(pidfd).map(Sandbox::below);
    loop {
        let inotify = sync.as_ref().map(|s| s.fd());
        let oom = limits.as_deref().and_then(Limits::fd);
        let mut fds = vec![PollFd::new(pidfd, PollFlags::IN)];
        if let Some(fd) = &inotify {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        if let Some(fd) = &oom {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        let timeout = sooner(sync.as_ref().and_then(|s| s.retry()), limits.as_deref());
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => return Some(1),
        }
        let exited = !fds[0].revents().is_empty();
        let git_ready = inotify.is_some() && !fds[1].revents().is_empty();
        let oom_ready = oom.is_some() && !fds[fds.len() - 1].revents().is_empty();
        drop(fds);
        if let Some(s) = sync.as_deref_mut() {
            s.tend(git_ready);
        }
        if let Some(l) = limits.as_deref_mut() {
            l.tend(oom_ready, &mut |sig| {
                if let Some(s) = &sandbox {
                    every_process(s, sig);
                }
            });
        }
        if exited {
            return None;
        }
    }
}

/// The sooner of the git copies' retry and the limits' next deadline.
fn sooner(
    retry: Option<&rustix::event::Timespec>,
    limits: Option<&Limits>,
) -> Option<rustix::event::Timespec> {
    let limit = limits.and_then(Limits::timeout).map(|d| rustix::event::Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: i64::from(d.subsec_nanos()),
    });
    match (retry.copied(), limit) {
        (Some(a), Some(b)) => Some(if (a.tv_sec, a.tv_nsec) <= (b.tv_sec, b.tv_nsec) {
            a
        } else {
            b
        }),
        (a, b) => a.or(b),
    }
}

/// A signal to every process of the sandbox /proc shows.
fn every_process(sandbox: &Sandbox, sig: rustix::process::Signal) {
    let me = std::process::id() as i32;
    for p in super::calls::processes().filter(|&p| p != me && Some(p) != sandbox.spare) {
        if sandbox.holds(p) == Some(true)
            && let Some(pid) = rustix::process::Pid::from_raw(p)
        {
            let _ = k::kill_process(pid, sig);
        }
    }
}

/// Said once, when the command makes a user namespace in the shared PID
/// mode.
const NESTED_NOTE: &str = "qwrap: note: the command made a user namespace, which cannot be given its id maps here (/proc is the host's, read-only): nested sandboxes (bwrap, Chromium's sandbox, unshare -r, qwrap) work under `qwrap run --pid private`\n";

/// Answers one notification: anything aimed outside (or at what cannot be
/// judged) is refused, the rest
/// goes on, if its caller is still the one that asked (the /proc reads
/// above took time).
fn answer(listener: &OwnedFd, sandbox: &Sandbox, n: &Notification) -> Option<i32> {
    let refuse = sandbox.refuses(n);
    if refuse.is_none() && !sys::notif_id_valid(listener.as_fd(), n.id) {
        return None;
    }
    // ENOENT: the caller went away meanwhile.
    let _ = sys::notif_send(listener.as_fd(), n.id, refuse);
    refuse
}

/// The egress proxy's configuration: its log, its refusals said on
/// `report` (where it says them) and recorded for --explain.
fn proxy_config(
    e: &Egress,
    log: Option<std::fs::File>,
    report: Option<&OwnedFd>,
    explaining: Option<&Explaining>,
) -> proxy::Config {
    let mut c = proxy::Config::new(e.allow.clone(), log);
    if let Some(fd) = report.filter(|_| e.say).and_then(|r| r.try_clone().ok()) {
        c = c.saying(std::fs::File::from(fd));
    }
    if let Some(e) = explaining {
        let seen = Arc::clone(&e.seen);
        c.refused = Some(Box::new(
            move |protocol: &str, destination: &str, reason: &str| {
                if let Ok(mut s) = seen.lock() {
                    s.record(0, egress_refusal(protocol, destination, reason));
                }
            },
        ));
    }
    c
}

/// An egress refusal, as --explain says it.
fn egress_refusal(protocol: &str, destination: &str, reason: &str) -> super::explain::Refusal {
    // The host alone: an allow-list rule without a port takes every port.
    let host = match destination.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => h.trim_start_matches('[').trim_end_matches(']'),
        _ => destination,
    };
    super::explain::Refusal {
        kind: super::explain::Kind::Egress,
        op: protocol.into(),
        target: destination.into(),
        errno: None,
        reason: reason.into(),
        option: Some(format!("--allow-domain {host}")),
    }
}

/// The sandbox is gone: the git copies made a last time, the proxy's last
/// connections let end and be logged (at most a second: the command is
/// gone, its peers hang up soon). The warden's exit code.
fn finish(sync: Option<&mut GitSync>, serving: Option<&proxy::Config>, at_exit: &AtExit) -> i32 {
    // Repositories made inside first: held aside before the git dirs' last
    // copies, which may take a while (a large object imported).
    at_exit.repositories();
    if let Some(s) = sync {
        s.last();
    }
    at_exit.command_done();
    if let Some(c) = serving {
        c.drain(std::time::Duration::from_secs(1));
    }
    0
}

/// The process a pidfd of ours refers to ("Pid:" in its fdinfo).
fn pidfd_pid(pidfd: &OwnedFd) -> Option<i32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd())).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("Pid:"))?
        .trim()
        .parse()
        .ok()
}
