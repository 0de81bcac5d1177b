//! The warden: a small process outside the sandbox, forked before the
//! namespaces are made, with exit signal 0: the command (which keeps qwrap's
//! PID) gets no SIGCHLD from it and `waitpid(-1)` never returns it; when the
//! command exits, the kernel hands it to init (or a subreaper) with SIGCHLD
//! restored. It answers the seccomp notifications of syscalls aimed at
//! another process (prlimit, setpriority, sched_*, ioprio_set,
//! migrate/move_pages and, without Landlock's signal scope, the signal
//! calls): allowed when every target is in the sandbox's user namespace,
//! EPERM otherwise. When the command exits it kills what the command left
//! behind in that namespace (unless --keep-background), then exits itself.

use super::pointers;
use crate::egress::proxy;
use crate::plan::Egress;
use crate::sys::kernel as k;
use crate::sys::{self, Notification};
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::io::Errno;
use std::path::PathBuf;

/// qwrap's side of a started warden: the socket it listens on.
pub(super) struct Link {
    pub(super) socket: OwnedFd,
}

/// Starts the warden. `watch`: git pointer files that do not exist yet,
/// moved aside when the command exits if it created them.
/// `hold`: locks kept for the sandbox's life (the warden outlives it).
/// `egress`: the proxy to serve once its socket is handed over.
pub(super) fn start(
    keep_background: bool,
    watch: &[PathBuf],
    hold: &[OwnedFd],
    egress: Option<&Egress>,
) -> Result<Link, Errno> {
    let (ours, theirs) = k::seqpacket_pair()?;
    let command = k::getpid();
    // Opened before the command can run. The warden says what it moved on
    // qwrap's stderr, kept only while the command's exit ends the warden:
    // with --keep-background it would hold a caller's pipe open.
    let watched = pointers::open(watch);
    let report = (!keep_background && !watched.is_empty())
        .then(|| k::fcntl_dupfd_cloexec(rustix::stdio::stderr(), 3).ok())
        .flatten();
    // The log is opened here, where the caller's rights apply.
    let log = match egress.and_then(|e| e.log.as_ref()) {
        Some(path) => Some(k::open_append(path).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?),
        None => None,
    };
    // The warden's own references to the locks: the last ones once the
    // command has replaced qwrap (close-on-exec), dropped when it exits.
    let held: Vec<OwnedFd> = hold
        .iter()
        .map(|h| k::fcntl_dupfd_cloexec(h, 3))
        .collect::<Result<_, _>>()?;
    match sys::fork_quiet()? {
        Some(_) => {
            drop(theirs);
            Ok(Link { socket: ours })
        }
        None => {
            drop(ours);
            let mut keep = pointers::raw_fds(&watched);
            keep.push(theirs.as_raw_fd());
            keep.extend(report.as_ref().map(|r| r.as_raw_fd()));
            keep.extend(held.iter().map(|h| h.as_raw_fd()));
            keep.extend(log.as_ref().map(|l| l.as_raw_fd()));
            sys::detach_warden(&keep);
            let proxy = egress.map(|e| proxy::Config::new(e.allow.clone(), log));
            let code = run(
                theirs,
                command,
                keep_background,
                &watched,
                report.as_ref(),
                proxy,
                held,
            );
            sys::exit_now(code)
        }
    }
}

/// Hands the listener to the warden.
pub(super) fn hand_over(link: Link, listener: OwnedFd) -> Result<(), Errno> {
    send_fd(&link.socket, listener, b'L')
}

/// Hands the egress proxy's listening socket to the warden.
pub(super) fn hand_over_egress(link: &Link, listener: OwnedFd) -> Result<(), Errno> {
    send_fd(&link.socket, listener, b'P')
}

fn send_fd(link: &OwnedFd, listener: OwnedFd, tag: u8) -> Result<(), Errno> {
    k::send_fd(link, tag, listener.as_fd())?;
    Ok(())
}

fn run(
    link: OwnedFd,
    command: rustix::process::Pid,
    keep_background: bool,
    watched: &[pointers::Watched],
    report: Option<&OwnedFd>,
    mut proxy: Option<proxy::Config>,
    mut held: Vec<OwnedFd>,
) -> i32 {
    let Ok(pidfd) = k::pidfd_open(command, rustix::process::PidfdFlags::empty()) else {
        return 1;
    };
    // The egress proxy's socket comes first, when there is one; then the
    // seccomp listener.
    let mut serving: Option<std::sync::Arc<proxy::Config>> = None;
    let listener = loop {
        match receive(&link) {
            Some((b'P', socket)) => {
                if let Some(config) = proxy.take() {
                    let listener = std::net::TcpListener::from(socket);
                    let config = std::sync::Arc::new(config);
                    serving = Some(std::sync::Arc::clone(&config));
                    let _ = std::thread::Builder::new()
                        .stack_size(256 * 1024)
                        .spawn(move || proxy::serve(listener, config));
                }
            }
            Some((_, l)) => break l,
            // qwrap failed before the command ran: nothing to do.
            None => return 0,
        }
    };
    let Ok(sandbox) = std::fs::read_link(format!("/proc/{}/ns/user", command.as_raw_nonzero())) else {
        return 1;
    };
    let w = Warden { sandbox };
    let mut command_alive = true;
    loop {
        let mut fds = vec![PollFd::new(&listener, PollFlags::IN)];
        if command_alive {
            fds.push(PollFd::new(&pidfd, PollFlags::IN));
        }
        match rustix::event::poll(&mut fds, None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => return 1,
        }
        let listener_ready = fds[0].revents();
        let exited = command_alive && !fds[1].revents().is_empty();
        if listener_ready.contains(PollFlags::IN) {
            if let Ok(n) = sys::notif_recv(listener.as_fd()) {
                let refuse = (!w.allows(&n)).then_some(libc::EPERM);
                // ENOENT: the caller went away meanwhile.
                let _ = sys::notif_send(listener.as_fd(), n.id, refuse);
            }
        } else if listener_ready.intersects(PollFlags::HUP | PollFlags::ERR) {
            // No process holds the filter any more: the command and all
            // it started are gone (with --keep-background, the last of the
            // leftovers too).
            pointers::audit(watched, report);
            finish(serving.as_deref());
            return 0;
        }
        if exited {
            command_alive = false;
            // Every process in the sandbox holds the filter: once none does
            // (the listener hangs up, after the caller reaps the command),
            // nothing is left to kill and /proc need not be walked. The
            // leftovers go before the pointers are checked.
            if !keep_background && !hangs_up_soon(&listener) {
                w.kill_leftovers();
            }
            // The cache layer slot is free for the workspace's next sandbox
            // as soon as nothing of this one can write to it any more.
            if !keep_background {
                held.clear();
            }
            pointers::audit(watched, report);
            if !keep_background {
                finish(serving.as_deref());
                return 0;
            }
        }
    }
}

/// Whether the listener hangs up within a moment (notifications that come
/// meanwhile are answered).
fn hangs_up_soon(listener: &OwnedFd) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(50);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        let ts = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: left.as_nanos() as i64,
        };
        let mut fds = [PollFd::new(listener, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(0) => return false,
            Ok(_) if fds[0].revents().intersects(PollFlags::HUP | PollFlags::ERR) => return true,
            Ok(_) => return false,
            Err(Errno::INTR) => {}
            Err(_) => return false,
        }
    }
}

/// Lets the proxy's last connections end and be logged (at most a
/// second: the command is gone, its peers hang up soon).
fn finish(serving: Option<&proxy::Config>) {
    if let Some(c) = serving {
        c.drain(std::time::Duration::from_secs(1));
    }
}

/// A descriptor the executor sent, with its tag (`L`: the seccomp
/// listener, `P`: the egress proxy's socket).
fn receive(link: &OwnedFd) -> Option<(u8, OwnedFd)> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let msg = rustix::net::recvmsg(
        link,
        &mut [std::io::IoSliceMut::new(&mut byte)],
        &mut anc,
        RecvFlags::CMSG_CLOEXEC,
    )
    .ok()?;
    if msg.bytes == 0 {
        return None;
    }
    anc.drain()
        .find_map(|m| match m {
            RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        })
        .map(|fd| (byte[0], fd))
}

struct Warden {
    /// The sandbox's user namespace, as /proc/PID/ns/user names it.
    sandbox: PathBuf,
}

/// Who a trapped call is aimed at.
enum Target {
    Pid(i32),
    Group(i32),
    /// Everything of the user's (kill(-1), PRIO_USER, IOPRIO_WHO_USER).
    Everyone,
    /// Nothing outside the caller (pid 0 and the like).
    Caller,
}

impl Warden {
    fn allows(&self, n: &Notification) -> bool {
        match self.target(n) {
            Target::Caller => true,
            Target::Pid(p) => self.inside(p),
            Target::Group(0) => group_of(n.pid as i32).is_some_and(|g| self.group_inside(g)),
            Target::Group(g) => self.group_inside(g),
            Target::Everyone => false,
        }
    }

    fn target(&self, n: &Notification) -> Target {
        let a = n.args;
        let int = |x: u64| x as u32 as i32;
        let nr = i64::from(n.nr);
        match nr {
            libc::SYS_kill => match int(a[0]) {
                0 => Target::Group(0),
                -1 => Target::Everyone,
                p if p < 0 => Target::Group(-p),
                p => Target::Pid(p),
            },
            // PRIO_PROCESS 0, PRIO_PGRP 1, PRIO_USER 2.
            libc::SYS_setpriority => match (a[0], int(a[1])) {
                (0, 0) => Target::Caller,
                (0, p) => Target::Pid(p),
                (1, g) => Target::Group(g),
                _ => Target::Everyone,
            },
            // IOPRIO_WHO_PROCESS 1, _PGRP 2, _USER 3.
            libc::SYS_ioprio_set => match (a[0], int(a[1])) {
                (1, 0) => Target::Caller,
                (1, p) => Target::Pid(p),
                (2, g) => Target::Group(g),
                _ => Target::Everyone,
            },
            libc::SYS_pidfd_send_signal => match pidfd_target(n.pid, int(a[0])) {
                Some(p) => Target::Pid(p),
                None => Target::Everyone,
            },
            libc::SYS_fcntl => match (a[1], int(a[2])) {
                (8, 0) => Target::Caller,
                (8, p) if p < 0 => Target::Group(-p),
                (8, p) => Target::Pid(p),
                _ => match owner_ex(n) {
                    Some((2, g)) => Target::Group(g),
                    Some((_, 0)) => Target::Caller,
                    Some((_, p)) => Target::Pid(p),
                    None => Target::Everyone,
                },
            },
            _ => match int(a[0]) {
                0 => Target::Caller,
                p => Target::Pid(p),
            },
        }
    }

    fn inside(&self, pid: i32) -> bool {
        match std::fs::read_link(format!("/proc/{pid}/ns/user")) {
            Ok(ns) => ns == self.sandbox,
            // Gone (or never was): the kernel answers ESRCH itself.
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    }

    /// Every member of the process group is in the sandbox.
    fn group_inside(&self, group: i32) -> bool {
        processes().all(|p| group_of(p) != Some(group) || self.inside(p))
    }

    fn kill_leftovers(&self) {
        let me = std::process::id() as i32;
        for _ in 0..50 {
            let left: Vec<i32> = processes()
                .filter(|&p| p != me && self.inside_strict(p))
                .collect();
            if left.is_empty() {
                return;
            }
            for p in left {
                if let Some(pid) = rustix::process::Pid::from_raw(p) {
                    let _ = k::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn inside_strict(&self, pid: i32) -> bool {
        std::fs::read_link(format!("/proc/{pid}/ns/user")).is_ok_and(|ns| ns == self.sandbox)
    }
}

fn processes() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// The process group of a process, from /proc/PID/stat (after the comm).
fn group_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// The process a pidfd of the caller's refers to ("Pid:" in its fdinfo).
fn pidfd_target(caller: u32, fd: i32) -> Option<i32> {
    let info = std::fs::read_to_string(format!("/proc/{caller}/fdinfo/{fd}")).ok()?;
    let pid: i32 = info
        .lines()
        .find_map(|l| l.strip_prefix("Pid:"))?
        .trim()
        .parse()
        .ok()?;
    // -1: the process has exited; the kernel answers ESRCH.
    Some(if pid < 0 { 0 } else { pid })
}

/// F_SETOWN_EX's `struct f_owner_ex { int type; pid_t pid; }`, read from
/// the caller's memory.
fn owner_ex(n: &Notification) -> Option<(i32, i32)> {
    use std::os::unix::fs::FileExt;
    let mem = std::fs::File::open(format!("/proc/{}/mem", n.pid)).ok()?;
    let mut buf = [0u8; 8];
    mem.read_exact_at(&mut buf, n.args[2]).ok()?;
    let t = i32::from_ne_bytes(buf[0..4].try_into().ok()?);
    let p = i32::from_ne_bytes(buf[4..8].try_into().ok()?);
    Some((t, p))
}
