//! The leftovers' end, the warden's side: with Landlock's signal scope
//! the reaper (started inside: reaper.rs) kills them and the warden waits
//! for the sandbox to empty; without it, /proc passes with forks held.

use super::calls::{Sandbox, processes};
use crate::sys;
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use std::time::{Duration, Instant};

/// How the warden finds the leftovers.
pub(super) enum Reaper {
    /// The reaper in the outer signal domain kills them; the warden waits
    /// for the sandbox to empty (and scans if it does not).
    Scoped,
    /// /proc passes with forks held.
    Scan,
}

impl Reaper {
    /// Kills every leftover.
    pub(super) fn kill_all(&self, sandbox: &Sandbox, listener: &OwnedFd) {
        if !matches!(self, Reaper::Scoped) || !empties(listener) {
            scan(sandbox);
        }
    }
}

/// Whether every holder of the filter is gone within two seconds (the
/// reaper's kill(-1) has landed); notifications meanwhile are refused.
fn empties(listener: &OwnedFd) -> bool {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
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
    }
}

fn scan(sandbox: &Sandbox) {
    let me = std::process::id() as i32;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<i32> = processes()
            .filter(|&p| p != me && sandbox.holds(p) == Some(true))
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            return;
        }
        for p in left {
            if let Some(pid) = rustix::process::Pid::from_raw(p) {
                let _ = crate::sys::kernel::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
