//! The leftovers' end, the warden's side: with Landlock's signal scope
//! the reaper (started inside: reaper.rs) kills them and the warden waits
//! for the sandbox to empty; without it, /proc passes until the filter's
//! listener says no process holds it.

use super::calls::{Sandbox, exited, processes};
use crate::sys;
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use std::time::{Duration, Instant};

/// How the warden finds the leftovers.
pub(super) enum Emptying {
    /// The reaper in the outer signal domain kills them; the warden waits
    /// for the sandbox to empty (and scans if it does not).
    Scoped,
    /// /proc passes until no process holds the filter.
    Scan,
}

impl Emptying {
    /// Kills every leftover.
    pub(super) fn kill_all(&self, sandbox: &Sandbox, listener: &OwnedFd) {
        if !matches!(self, Emptying::Scoped) || !empties(listener, Duration::from_secs(2)) {
            scan(sandbox, listener);
        }
    }
}

/// Whether every holder of the filter is gone within `wait` (every process
/// of the sandbox, a zombie too until it is reaped, holds it, and none can
/// drop it); notifications meanwhile are refused.
fn empties(listener: &OwnedFd, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ts = rustix::event::Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [PollFd::new(listener, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(_) if fds[0].revents().intersects(PollFlags::HUP | PollFlags::ERR) => return true,
            Ok(_) if fds[0].revents().contains(PollFlags::IN) => {
                if let Ok(n) = sys::notif_recv(listener.as_fd()) {
                    let _ = sys::notif_send(listener.as_fd(), n.id, Some(libc::EPERM));
                }
            }
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => return false,
        }
        if left.is_zero() {
            return false;
        }
    }
}

/// Kills every process of the sandbox that /proc shows, pass after pass,
/// until the listener says none holds the filter. A pass can miss a
/// process that forks and exits in a loop (its pid is newer than the
/// listing), so passes that find nothing are not taken for an empty
/// sandbox: only the listener's hangup is, or, where a zombie of the
/// sandbox still holds the filter (a PID 1 that does not reap), two
/// passes in a row that find none alive and no new zombie (a process that
/// forks leaves one zombie each time under such a PID 1). A zombie is sent
/// a SIGKILL too, for threads it may have left. Forks go on meanwhile, but
/// a fork that a pending SIGKILL meets is cancelled (copy_process checks
/// under the task list lock). The first pass goes up from the oldest, so
/// that what does not fork dies at once; the later ones take the newest
/// first (counting down from the last pid given out, past the wrap at
/// pid_max).
fn scan(sandbox: &Sandbox, listener: &OwnedFd) {
    let me = std::process::id() as i32;
    let pid_max = read_number("/proc/sys/kernel/pid_max").unwrap_or(1 << 22);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut empty = 0;
    let mut zombies = std::collections::HashSet::new();
    let mut first = true;
    while Instant::now() < deadline && !empties(listener, Duration::ZERO) {
        newest(sandbox, me, pid_max);
        let last = read_number("/proc/sys/kernel/ns_last_pid").unwrap_or(pid_max);
        let mut pids: Vec<i32> = processes().filter(|&p| p != me).collect();
        pids.sort_unstable_by_key(|&p| (last - p).rem_euclid(pid_max));
        if first {
            pids.reverse();
        }
        first = false;
        let mut found = false;
        for p in pids {
            // A zombie seen before costs one read, not the namespace walk.
            if zombies.contains(&p) && exited(p) {
                continue;
            }
            if kill_if_inside(sandbox, p) {
                found |= !exited(p) || zombies.insert(p);
            }
        }
        empty = if found { 0 } else { empty + 1 };
        if empty >= 2 {
            if empties(listener, Duration::from_millis(100)) || zombies.iter().any(|&p| unreaped(p)) {
                return;
            }
            empty = 0;
        }
    }
}

/// Whether `pid` is still a zombie, not yet reaped.
fn unreaped(pid: i32) -> bool {
    exited(pid) && std::fs::symlink_metadata(format!("/proc/{pid}")).is_ok()
}

/// Kills the sandbox's newest processes, the last few pids given out, again
/// and again until none of them is one of its live processes: a process
/// that forks and exits in a loop is among them at every moment, and a
/// few reads reach it before its next fork does (a whole pass would not).
fn newest(sandbox: &Sandbox, me: i32, pid_max: i32) {
    for _ in 0..100_000 {
        let Some(last) = read_number("/proc/sys/kernel/ns_last_pid") else {
            return;
        };
        let mut found = false;
        for p in (0..8).map(|d| (last - d - 1).rem_euclid(pid_max) + 1) {
            if p != me && kill_if_inside(sandbox, p) {
                found |= !exited(p);
            }
        }
        if !found {
            return;
        }
    }
}

/// SIGKILL to `pid` if it is the sandbox's; whether it was.
fn kill_if_inside(sandbox: &Sandbox, pid: i32) -> bool {
    let Some(p) = rustix::process::Pid::from_raw(pid).filter(|_| sandbox.holds(pid) == Some(true)) else {
        return false;
    };
    let _ = crate::sys::kernel::kill_process(p, rustix::process::Signal::KILL);
    true
}

fn read_number(path: &str) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}
