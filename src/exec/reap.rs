//! What the command leaves behind is killed when it exits, whatever
//! namespaces it made and however fast it forks.
//!
//! - With Landlock's signal scope (ABI ≥ 6) a reaper is started just
//!   before the sandbox's ruleset, in a Landlock domain of its own that
//!   only scopes signals (and grants every reparenting, which a domain
//!   otherwise denies); the sandbox's domain nests inside it. When the
//!   command exits the reaper's one `kill(-1, SIGKILL)` reaches exactly the
//!   processes of that domain (no process can leave a Landlock domain), and
//!   the kernel delivers it under the task list lock, so a fork cannot race
//!   it. The sandbox cannot signal or trace the reaper (its domain is the
//!   outer one), and the warden refuses every trapped call aimed at it.
//!   The warden waits for the sandbox to empty before its last jobs.
//! - Without it, every fork of the sandbox is a notification the warden
//!   answers while the command lives and holds once it has exited; the
//!   warden then walks /proc and kills every process whose user namespace
//!   is the sandbox's or one made inside it (NS_GET_PARENT), again until a
//!   pass finds none. No process can be made meanwhile, so the passes end.

use super::warden_calls::{Sandbox, processes};
use std::time::{Duration, Instant};

use super::Fail;
use crate::sys;
use crate::sys::fake;
use crate::sys::kernel as k;
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::io::Errno;

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

/// Starts the reaper: enters the outer signal domain, forks it detached
/// (not a child of the command), and returns a pidfd of it for the warden.
/// In the reaper: a session of its own (no process group of the command's
/// holds it), only the command's pidfd kept; when the command exits, and
/// if a process outside (the caller) is indeed out of its signal reach,
/// kill(-1, SIGKILL).
pub(super) fn start() -> Result<OwnedFd, Fail> {
    let command = k::getpid();
    let outside = k::getppid();
    super::landlock::signal_domain()?;
    let watch = k::pidfd_open(command, rustix::process::PidfdFlags::empty())?;
    let (r, w) = k::pipe_cloexec()?;
    match sys::fork_detached()? {
        Some(()) => {
            drop(w);
            let mut b = [0u8; 4];
            let n = k::read(&r, &mut b)?;
            // The recording fake reads nothing and stands for the reaper.
            if n != 4 && !fake::takes("read") {
                return Err(Errno::CHILD.into());
            }
            let pid =
                rustix::process::Pid::from_raw(i32::from_ne_bytes(b)).unwrap_or(rustix::process::Pid::INIT);
            Ok(k::pidfd_open(pid, rustix::process::PidfdFlags::empty())?)
        }
        None => {
            let _ = k::setsid();
            let _ = k::write(&w, &(std::process::id() as i32).to_ne_bytes());
            drop((r, w));
            sys::detach_warden(&[watch.as_raw_fd()]);
            let mut fds = [PollFd::new(&watch, PollFlags::IN)];
            while !matches!(rustix::event::poll(&mut fds, None), Ok(n) if n > 0) {}
            if outside.is_some_and(|o| k::test_kill_process(o) == Err(Errno::PERM)) {
                sys::kill_everything_reachable();
            }
            sys::exit_now(0)
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
