//! The warden: a small process outside the sandbox, started before the
//! namespaces and detached, so that the command (which keeps qwrap's PID)
//! has exactly the children it makes. Here: what it is handed, and its
//! jobs put together for one loop (jobs.rs): the filter's trapped calls
//! (trapped.rs), the git dirs kept in step, the limits, the command's end;
//! the egress proxy on a thread of its own. When the command exits it ends
//! what was left behind (leftovers.rs; unless --keep-background), makes the
//! git copies a last time, looks at the repositories and lfs stores
//! (at_exit.rs, planted.rs), then exits itself.

use crate::egress::proxy;
use crate::plan::{Egress, StartWarden};
use crate::sys::{self, kernel as k};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::io::Errno;
use std::path::{Path, PathBuf};

use super::at_exit::{AtExit, Repos};
use super::calls::Sandbox;
use super::explain::{Explaining, Recorder};
use super::explain_judge::Judge;
use super::git_sync::{GitSync, Kind, Pair};
use super::handover::{self, Handed, WardenLink};
use super::jobs::{Ended, Exit, Job, Limited, serve};
use super::leftovers::Emptying;
use super::limits::Limits;
use super::trapped::Trapped;
use std::sync::{Arc, Mutex};

/// Starts the warden. `hold`: locks kept for the sandbox's life (the
/// warden outlives it).
pub(crate) fn start(orders: &StartWarden, hold: &[OwnedFd]) -> Result<WardenLink, Errno> {
    let StartWarden {
        git, watch, writable, ..
    } = orders;
    let (keep_background, scoped, notes) = (orders.keep_background, orders.scoped, orders.notes);
    let (egress, review) = (orders.egress.as_deref(), orders.review.as_deref());
    let explain = orders.explain.as_deref().cloned();
    let ending = Ending::new(orders.remove.as_deref());
    let repos = orders.repos.as_deref().map(|r| Repos::new(r, !keep_background));
    let limits = orders.limits.clone();
    if let Some(m) = limits.as_ref().and_then(|l| l.memory.as_ref()) {
        crate::git_receive::hold_to_memory(m.limit);
    }
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
        let roots = repos.as_ref().map(|r| r.scan.roots.clone()).unwrap_or_default();
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
            roots,
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
            let _ = k::remove_tree(dir);
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
    /// The writable roots: a git dir whose work tree lies outside them
    /// (a linked worktree's main checkout) shares only its refs.
    roots: Vec<PathBuf>,
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
        roots,
        mut notes,
        writable,
        mut explaining,
    } = duties;
    let (mut own_git, mut sync): (Vec<OwnedFd>, Option<GitSync>) = (Vec::new(), None);
    let Ok(pidfd) = k::pidfd_open(command, rustix::process::PidfdFlags::empty()) else {
        at_exit.command_done();
        return 1;
    };
    // Imports are of the guarded git dirs' objects alone: without one, no
    // thread to halt them.
    if !keep_background && !git.is_empty() {
        halt_imports_at_exit(&pidfd);
    }
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
                    sync = git_sync(&git, own_git.drain(..), report.take(), &lfs, &roots);
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
    let mut trapped = Trapped {
        listener: &listener,
        sandbox: &sandbox,
        explaining: explaining.as_mut(),
        notes: notes.take(),
        writable: &writable,
    };
    let mut command = Some(Exit(&pidfd));
    loop {
        let mut limited = limits.as_deref_mut().map(|limits| Limited {
            limits,
            sandbox: Some(&sandbox),
        });
        let mut jobs: Vec<&mut dyn Job> = Vec::new();
        jobs.extend(sync.as_mut().map(|s| s as &mut dyn Job));
        jobs.extend(limited.as_mut().map(|l| l as &mut dyn Job));
        jobs.extend(command.as_mut().map(|c| c as &mut dyn Job));
        jobs.push(&mut trapped);
        match serve(&mut jobs) {
            None => return 1,
            // At once: every process left is killed before anything else.
            Some(Ended::Command) if !keep_background => {
                reaper.kill_all(&sandbox, &listener);
                // The cache layer slot is free for the workspace's next
                // sandbox as soon as nothing of this one can write to it.
                held.clear();
                return finish(sync.as_mut(), serving.as_deref(), at_exit);
            }
            // Kept: the loop goes on until the last of them is gone.
            Some(Ended::Command) => command = None,
            Some(Ended::Calls) => return finish(sync.as_mut(), serving.as_deref(), at_exit),
        }
    }
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
    roots: &[std::path::PathBuf],
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
            // A `.git` whose work tree lies outside the writable roots: a
            // linked worktree's common dir, whose HEAD, index and state are
            // its main checkout's.
            let foreign = kind == Kind::Top
                && host.file_name().is_some_and(|n| n == ".git")
                && !roots.is_empty()
                && !roots
                    .iter()
                    .any(|r| host.parent().is_some_and(|p| p.starts_with(r)));
            Pair::new(host.clone(), own, kind)
                .ok()
                .map(|p| p.foreign(foreign, roots))
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

/// Keeps the git copies in step, and the limits, until the process behind
/// `pidfd` (PID 1 of the sandbox's own PID namespace) exits; Some(exit
/// code) when polling fails.
fn watch(pidfd: &OwnedFd, sync: Option<&mut GitSync>, limits: Option<&mut Limits>) -> Option<i32> {
    // Every process of the sandbox, where its limits have no group to list
    // them: PID 1 and what descends from it.
    let sandbox = pidfd_pid(pidfd).map(Sandbox::below);
    let mut limited = limits.map(|limits| Limited {
        limits,
        sandbox: sandbox.as_ref(),
    });
    let mut init = Exit(pidfd);
    let mut jobs: Vec<&mut dyn Job> = Vec::new();
    jobs.extend(sync.map(|s| s as &mut dyn Job));
    jobs.extend(limited.as_mut().map(|l| l as &mut dyn Job));
    jobs.push(&mut init);
    match serve(&mut jobs) {
        Some(_) => None,
        None => Some(1),
    }
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
fn egress_refusal(protocol: &str, destination: &str, reason: &str) -> super::refusal::Refusal {
    // The host alone: an allow-list rule without a port takes every port.
    let host = match destination.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => h.trim_start_matches('[').trim_end_matches(']'),
        _ => destination,
    };
    super::refusal::Refusal {
        kind: super::refusal::Kind::Egress,
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
    // copies, which may take a while (a large object imported); an import
    // the command's end stopped is taken up again after.
    at_exit.repositories();
    crate::git_receive::resume_imports();
    if let Some(s) = sync {
        s.last();
    }
    at_exit.command_done();
    if let Some(c) = serving {
        c.drain(std::time::Duration::from_secs(1));
    }
    0
}

/// A thread of its own that halts the imports of the command's objects
/// the moment the command exits (`git_receive::halt_imports`): the loop
/// may be inside one for minutes, and the end's look at the repositories
/// made inside waits for the loop.
fn halt_imports_at_exit(pidfd: &OwnedFd) {
    let Ok(watch) = pidfd.try_clone() else {
        return;
    };
    let _ = std::thread::Builder::new().stack_size(64 * 1024).spawn(move || {
        loop {
            let mut fds = [rustix::event::PollFd::new(&watch, rustix::event::PollFlags::IN)];
            match k::poll(&mut fds, None) {
                Ok(_) if !fds[0].revents().is_empty() => break,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return,
            }
        }
        crate::git_receive::halt_imports();
    });
}

/// The process a pidfd of ours refers to ("Pid:" in its fdinfo).
fn pidfd_pid(pidfd: &OwnedFd) -> Option<i32> {
    let info = k::read_file(Path::new(&format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd()))).ok()?;
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("Pid:"))?
        .trim()
        .parse()
        .ok()
}
