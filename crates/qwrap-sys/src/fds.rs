//! Descriptors known only by number: the ones qwrap inherited from its
//! caller, inspected before the sandbox is made and sealed before exec.

use super::fake::{self, faked};
use super::last_errno;
use rustix::fd::{AsRawFd, BorrowedFd, OwnedFd};
use rustix::io::{Errno, FdFlags};

/// Runs `f` on an fd known only by number, when it is open.
pub fn with_inherited_fd<R>(fd: i32, f: impl FnOnce(BorrowedFd<'_>) -> R) -> Result<R, Errno> {
    if fake::takes("fcntl") {
        let null = fake::fd();
        return Ok(f(rustix::fd::AsFd::as_fd(&null)));
    }
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: the fd is open (checked above), qwrap is single-threaded and
    // nothing closes it while `f` holds this borrow, which ends here.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    Ok(f(b))
}

/// Puts `new` at number `fd` (dup2 leaves the copy without close-on-exec)
/// and closes `new`.
pub fn dup_onto(new: OwnedFd, fd: i32) -> Result<(), Errno> {
    faked!("dup3", Ok(()));
    if new.as_raw_fd() == fd {
        std::mem::forget(new);
        return Ok(());
    }
    // SAFETY: dup2 onto a number atomically replaces whatever was there; no
    // Rust object owns `fd` (it is a number handed over by the caller).
    if unsafe { libc::dup2(new.as_raw_fd(), fd) } < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(())
}

/// Marks every fd from 3 up close-on-exec, then clears the flag on `keep`:
/// exactly 0-2 and `keep` reach the command, whatever else is open.
/// close_range(CLOSE_RANGE_CLOEXEC) needs Linux 5.11; older kernels get a
/// walk of /proc/self/fd.
pub fn close_others_at_exec(keep: &[i32]) -> Result<(), Errno> {
    let ret = if fake::takes("close_range") {
        0
    } else {
        // SAFETY: close_range with CLOSE_RANGE_CLOEXEC closes nothing; it
        // only sets a flag on descriptor table entries.
        unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) }
    };
    if ret < 0 {
        match last_errno() {
            libc::ENOSYS | libc::EINVAL => mark_listed_cloexec()?,
            e => return Err(Errno::from_raw_os_error(e)),
        }
    }
    for &fd in keep {
        with_inherited_fd(fd, |b| rustix::io::fcntl_setfd(b, FdFlags::empty()))??;
    }
    Ok(())
}

fn mark_listed_cloexec() -> Result<(), Errno> {
    let dir =
        std::fs::read_dir("/proc/self/fd").map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    let fds: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd >= 3)
        .collect();
    for fd in fds {
        // The listing's own fd is gone by now: EBADF is fine.
        match with_inherited_fd(fd, |b| rustix::io::fcntl_setfd(b, FdFlags::CLOEXEC)) {
            Ok(r) => r?,
            Err(Errno::BADF) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The file a Unix socket held by another process is bound to, as an O_PATH
/// fd: the socket is copied from `pid`'s fd `fd` (pidfd_getfd, Linux ≥ 5.6,
/// ptrace rights over `pid`) and asked with SIOCUNIXFILE (CAP_NET_ADMIN in
/// its network namespace). In practice: when qwrap runs as root.
pub fn unix_socket_file(pid: u32, fd: i32) -> Result<OwnedFd, Errno> {
    use rustix::fd::FromRawFd;
    const SIOCUNIXFILE: libc::c_ulong = 0x89E0;
    let syscall_fd = |ret: libc::c_long| -> Result<OwnedFd, Errno> {
        if ret < 0 {
            return Err(Errno::from_raw_os_error(last_errno()));
        }
        // SAFETY: the kernel just returned this new descriptor to us and
        // nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
    };
    // SAFETY: pidfd_open takes a pid and flags, no pointers.
    let pidfd = syscall_fd(unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) })?;
    // SAFETY: pidfd_getfd takes our pidfd, a number in the other process's
    // table and flags, no pointers.
    let sock = syscall_fd(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) })?;
    // SAFETY: SIOCUNIXFILE takes no argument and returns a new fd.
    syscall_fd(unsafe { libc::ioctl(sock.as_raw_fd(), SIOCUNIXFILE, 0) } as libc::c_long)
}

/// `path` opened for writing from its start (made 0600 when missing).
pub fn open_truncate(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    faked!("openat", args: format!("{path:?}, O_WRONLY|O_CREAT|O_TRUNC"), Ok(std::fs::File::from(fake::fd())));
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .create(true)
        .mode(0o600)
        .open(path)
}
