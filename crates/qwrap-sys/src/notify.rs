//! seccomp user notifications: the filter that hands chosen syscalls to a
//! supervisor (the warden), and the supervisor's receive and reply.

use super::fake::faked;
use super::last_errno;
use rustix::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use rustix::io::Errno;

/// Installs a BPF program whose USER_NOTIF returns go to the returned
/// listener fd (Linux ≥ 5.0; no_new_privs must be set).
pub fn seccomp_listener(program: &[(u16, u8, u8, u32)]) -> Result<OwnedFd, Errno> {
    faked!("seccomp", Ok(super::fake::fd()));
    seccomp_install(program, true).and_then(|fd| fd.ok_or(Errno::INVAL))
}

/// `seccomp(SECCOMP_SET_MODE_FILTER)` of one program, with a new listener
/// when asked.
pub fn seccomp_install(program: &[(u16, u8, u8, u32)], listener: bool) -> Result<Option<OwnedFd>, Errno> {
    let mut filters: Vec<libc::sock_filter> = program
        .iter()
        .map(|&(code, jt, jf, k)| libc::sock_filter { code, jt, jf, k })
        .collect();
    let prog = libc::sock_fprog {
        len: u16::try_from(filters.len()).map_err(|_| Errno::INVAL)?,
        filter: filters.as_mut_ptr(),
    };
    let flags = if listener {
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
    } else {
        0
    };
    // SAFETY: `prog` points at `filters`, alive for the call; the kernel
    // copies the program and, with a listener, returns a new fd that
    // nothing else owns.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &prog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: with a listener, a new descriptor the kernel just returned.
    Ok(listener.then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) }))
}

/// One notification: who asked, for which syscall, with which arguments.
#[derive(Debug, Clone, Copy)]
pub struct Notification {
    pub id: u64,
    pub pid: u32,
    pub nr: i32,
    pub args: [u64; 6],
}

/// Waits for the next notification on the listener.
pub fn notif_recv(listener: BorrowedFd<'_>) -> Result<Notification, Errno> {
    // SAFETY: an all-zero seccomp_notif is valid, and the kernel requires it
    // zeroed.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: RECV fills the struct we pass, which is of the size the ioctl
    // number encodes.
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) };
    if r < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(Notification {
        id: n.id,
        pid: n.pid,
        nr: n.data.nr,
        args: n.data.args,
    })
}

/// Answers a notification: `None` lets the syscall run (the decision was
/// about which process it targets, not about memory the caller could still
/// change), `Some(errno)` fails it.
pub fn notif_send(listener: BorrowedFd<'_>, id: u64, refuse: Option<i32>) -> Result<(), Errno> {
    faked!("notif_send", args: format!("{id}, {}", refuse.map_or("CONTINUE".into(), |e| format!("-{e}"))), Ok(()));
    let resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: refuse.map_or(0, |e| -e),
        flags: if refuse.is_none() {
            libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32
        } else {
            0
        },
    };
    // SAFETY: SEND reads the struct we pass, of the size the ioctl encodes.
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
    if r < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(())
}

/// Answers a notification with the result of a call the warden made on
/// the caller's behalf: `Ok(())` returns 0, `Err(errno)` fails it; the
/// caller's own call never runs.
pub fn notif_answer(listener: BorrowedFd<'_>, id: u64, result: Result<(), i32>) -> Result<(), Errno> {
    faked!("notif_answer", args: format!("{id}, {}", result.err().map_or(0, |e| -e)), Ok(()));
    let resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: result.err().map_or(0, |e| -e),
        flags: 0,
    };
    // SAFETY: SEND reads the struct we pass, of the size the ioctl encodes.
    let r = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
    if r < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(())
}

/// The warden leaves the caller's terminal and pipes (a caller reading
/// qwrap's output must see EOF when the command ends, not when the warden
/// does) and every other inherited fd but `keep`, and ignores the signals a
/// terminal or a caller sends the command's process group: it ends when the
/// command does.
pub fn detach_warden(keep: &[i32]) {
    if let Ok(null) = rustix::fs::open("/dev/null", rustix::fs::OFlags::RDWR, rustix::fs::Mode::empty()) {
        for fd in 0..3 {
            // SAFETY: dup2 onto 0-2 replaces them; nothing in the warden
            // holds them as Rust objects.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    let mut keep: Vec<u32> = keep.iter().filter(|&&fd| fd > 2).map(|&fd| fd as u32).collect();
    keep.sort_unstable();
    keep.dedup();
    let mut from = 3u32;
    for fd in keep.into_iter().chain([u32::MAX]) {
        if fd > from {
            // SAFETY: closes only numbers outside 0-2 and `keep`; the warden
            // holds no other Rust-owned fds at this point.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, 0u32) };
        }
        from = fd.saturating_add(1);
    }
    for sig in [
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGHUP,
        libc::SIGTERM,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
        libc::SIGPIPE,
    ] {
        // SAFETY: SIG_IGN installs no handler code.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
}

/// Ends a forked process at once, without running the parent's exit
/// handlers or flushing its buffers twice.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and touches no Rust state.
    unsafe { libc::_exit(code) }
}

/// Whether a notification is still pending: the caller has not died (and
/// its pid been reused) since it was received.
pub fn notif_id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    if super::fake::answer_about("notif_id_valid", || id.to_string()).is_some() {
        return true;
    }
    // SAFETY: ID_VALID reads the u64 we pass, of the size the ioctl encodes.
    unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 }
}

/// Asks the kernel to wake the listener's reader on the caller's CPU and
/// switch to it at once (`SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP`, Linux ≥
/// 6.6): a round trip that does not wait for the scheduler to find the
/// supervisor a CPU. EINVAL on older kernels (the round trip as before).
pub fn notif_sync_wake_up(listener: BorrowedFd<'_>) -> Result<(), Errno> {
    const SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: u64 = 1;
    // SAFETY: SET_FLAGS takes its flags as the argument itself.
    let r = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SET_FLAGS,
            SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
        )
    };
    if r < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(())
}

/// Reads another process's memory at `at` into `buf` (`process_vm_readv`:
/// the caller of a notification, which ptrace access lets the warden read);
/// the bytes read, fewer where the mapping ends.
pub fn read_memory(pid: i32, at: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: at as usize as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the local iovec covers `buf`, alive and writable for the
    // call; the remote one is only read by the kernel, in the other
    // process, which checks it.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(n as usize)
}
