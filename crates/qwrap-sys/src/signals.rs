//! Signals read from a descriptor (signalfd), for a supervisor that waits
//! on a terminal, a pty and its child in one poll.

use crate::last_errno;
use rustix::fd::{AsFd, FromRawFd, OwnedFd};
use rustix::io::Errno;

fn set_of(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset and sigaddset only write the set they are given,
    // which lives on this stack; a number out of range is refused, not UB.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks `signals` and returns a signalfd that reads them: from now on
/// each arrives as a record, not through a handler.
pub fn signal_fd(signals: &[i32]) -> Result<OwnedFd, Errno> {
    let set = set_of(signals);
    // SAFETY: the set is initialised above; the old mask is not wanted.
    if unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } != 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: -1 asks for a new descriptor; the set outlives the call.
    let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
    if fd < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `signals` unblocked again (in a child that goes on to the command).
pub fn unblock_signals(signals: &[i32]) {
    let set = set_of(signals);
    // SAFETY: as in `signal_fd`.
    unsafe { libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
}

/// The next signal waiting on a `signal_fd`: its number and si_code (0
/// or less: sent by a process; above 0: by the kernel, a terminal's).
pub fn next_signal(fd: impl AsFd) -> Option<(i32, i32)> {
    // struct signalfd_siginfo: 128 bytes, ssi_signo at 0, ssi_code at 8.
    let mut buf = [0u8; 128];
    match rustix::io::read(fd.as_fd(), &mut buf) {
        Ok(128) => Some((
            u32::from_ne_bytes(buf[0..4].try_into().ok()?) as i32,
            i32::from_ne_bytes(buf[8..12].try_into().ok()?),
        )),
        _ => None,
    }
}

/// kill(2) with a raw signal number (negative `pid`: a process group).
pub fn send_signal(pid: i32, sig: i32) -> Result<(), Errno> {
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sent_to_ourselves_is_read_from_the_descriptor() {
        // SIGURG: no test harness sends it, and its default is to ignore.
        let fd = signal_fd(&[libc::SIGURG]).unwrap();
        // SAFETY: a signal to this thread, blocked here and so only queued
        // (the harness's other threads would discard it).
        unsafe { libc::raise(libc::SIGURG) };
        assert_eq!(next_signal(&fd).map(|s| s.0), Some(libc::SIGURG));
        assert_eq!(next_signal(&fd), None);
        unblock_signals(&[libc::SIGURG]);
    }
}
