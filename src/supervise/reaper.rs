//! The reaper, started inside: what the command leaves behind is killed
//! when it exits, whatever namespaces it made and however fast it forks.
//! (The warden's side: supervise/leftovers.rs.)
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
//! - Without it, the warden kills, when the command exits, every process
//!   whose user namespace is the sandbox's or one made inside it
//!   (NS_GET_PARENT): those /proc lists and every pid given out since,
//!   until a look at the newest finds none alive (leftovers.rs). Forks are not trapped: a held fork fails with EINTR
//!   when a signal arrives, and shells then cannot fork.

use crate::sys::kernel as k;
use crate::sys::landlock::{Domain, FsAccess, Scopes, restrict_self};
use crate::sys::{self, SysError};
use rustix::fd::{AsRawFd, OwnedFd};

/// Starts the reaper: enters the outer signal domain, clones it detached
/// (not a child of the command; sharing the command's memory until its
/// exec, on a stack of its own: sys::spawn_reaper), and returns a pidfd
/// of it for the warden. In the reaper: a session of its own (no process
/// group of the command's holds it), only the command's pidfd kept; when
/// the command exits, and if a process outside of the caller's is indeed
/// out of its signal reach, kill(-1, SIGKILL). That process is the warden
/// (the caller's uid, alive until the sandbox is empty), else the caller:
/// a caller that died first (ESRCH) left the leftovers alive.
pub(crate) fn start(warden: Option<rustix::process::Pid>) -> Result<OwnedFd, crate::sys::SysError> {
    let command = k::getpid();
    let outside = warden.or_else(k::getppid);
    signal_domain()?;
    let watch = k::pidfd_open(command, rustix::process::PidfdFlags::empty())
        .map_err(|e| SysError::new("pidfd_open", format!("{}, 0", command.as_raw_nonzero()), e))?;
    let (_, reaper) = sys::spawn_reaper(watch.as_raw_fd(), outside.map(|p| p.as_raw_nonzero().get()))
        .map_err(|e| {
            SysError::new(
                "clone",
                "CLONE_VM|CLONE_VFORK|CLONE_FILES, then CLONE_VM|CLONE_PIDFD",
                e,
            )
        })?;
    Ok(reaper)
}

/// The reaper's domain: it handles only reparenting (REFER), granted
/// beneath `/` (a domain otherwise denies every cross-directory rename and
/// link), and scopes signals. The sandbox's ruleset nests inside it, so
/// the reaper's kill(-1) reaches exactly the sandbox's processes and the
/// sandbox cannot signal or trace the reaper.
fn signal_domain() -> Result<(), SysError> {
    restrict_self(&Domain {
        abi: crate::plan::LANDLOCK_SCOPE_ABI,
        handle: Some(FsAccess::Refer),
        scopes: Scopes::Signals,
        no_tcp: false,
        beneath: vec![("/".into(), FsAccess::Refer)],
        skip_missing: false,
    })
}
