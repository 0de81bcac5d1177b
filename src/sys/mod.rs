//! The few raw system calls rustix does not wrap, and the ones rustix marks
//! unsafe. Every `unsafe` block of the crate lives here (`#![deny(unsafe_code)]`
//! holds everywhere else).

mod exec;
pub mod fake;
mod fds;
pub mod kernel;
mod notify;

pub use exec::{apply_filters, exec_after_filters};

pub use fds::{close_others_at_exec, dup_onto, unix_socket_file, with_inherited_fd};
pub use notify::{
    Notification, detach_warden, exit_now, join_new_session_keyring, notif_id_valid, notif_recv, notif_send,
    seccomp_install, seccomp_listener,
};

/// The errno the kernel answers to syscall `nr` with no arguments (for a
/// number no kernel knows: ENOSYS).
pub fn unknown_syscall_errno(nr: u32) -> i32 {
    // SAFETY: a syscall with zero arguments; one the kernel knows would
    // only read registers, and this is called for numbers it does not.
    let r = unsafe { libc::syscall(libc::c_long::from(nr), 0, 0, 0, 0, 0, 0) };
    if r < 0 { last_errno() } else { 0 }
}

use fake::faked;
use rustix::fd::{AsRawFd, BorrowedFd};
use rustix::io::Errno;
use std::ffi::CStr;

/// `MOUNT_ATTR_*` bits for `mount_setattr(2)`.
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
pub const MOUNT_ATTR_NOEXEC: u64 = 0x8;
/// `AT_RECURSIVE`: apply to the whole subtree.
pub const AT_RECURSIVE: u32 = 0x8000;
/// `MS_PRIVATE` as a propagation type for `struct mount_attr`.
pub const MS_PRIVATE: u64 = 1 << 18;

/// `struct mount_attr` (include/uapi/linux/mount.h, MOUNT_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct MountAttr {
    pub attr_set: u64,
    pub attr_clr: u64,
    pub propagation: u64,
    pub userns_fd: u64,
}

/// `mount_setattr(dirfd, path, flags, attr, sizeof attr)`.
pub fn mount_setattr(dirfd: BorrowedFd<'_>, path: &CStr, flags: u32, attr: &MountAttr) -> Result<(), Errno> {
    faked!("mount_setattr", Ok(()));
    // SAFETY: `path` is a valid NUL-terminated string and `attr` a valid
    // `struct mount_attr` that outlive the call; the size passed is its exact
    // size, and the kernel only reads from both.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd.as_raw_fd(),
            path.as_ptr(),
            flags,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(last_errno()))
    }
}

/// Whether the kernel has `mount_setattr(2)` (Linux ≥ 5.12). Unknown flags
/// give EINVAL before any permission check where it exists; ENOSYS (or EPERM
/// under some seccomp filters) where it does not.
pub fn mount_setattr_available() -> bool {
    let attr = MountAttr::default();
    // SAFETY: as above; with unknown flags the kernel fails before reading
    // the path or the attributes.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            -1,
            std::ptr::null::<libc::c_char>(),
            u32::MAX,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    !(ret != 0 && matches!(last_errno(), libc::ENOSYS | libc::EPERM))
}

const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
const SIOCSIFFLAGS: libc::c_ulong = 0x8914;

/// `struct ifreq` with the flags member of its union (40 bytes on Linux).
#[repr(C)]
struct IfReqFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Brings an interface up with `ioctl(SIOCSIFFLAGS)` on `sock`.
pub fn interface_up(sock: BorrowedFd<'_>, name: &str) -> Result<(), Errno> {
    faked!("ioctl", Ok(()));
    let mut req = IfReqFlags {
        name: [0; 16],
        flags: 0,
        _pad: [0; 22],
    };
    if name.len() >= req.name.len() {
        return Err(Errno::NAMETOOLONG);
    }
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: `req` is a properly sized, initialised `struct ifreq` that lives
    // across both calls; SIOCGIFFLAGS writes only its flags member.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), SIOCGIFFLAGS, &mut req as *mut IfReqFlags) != 0 {
            return Err(Errno::from_raw_os_error(last_errno()));
        }
        req.flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), SIOCSIFFLAGS, &req as *const IfReqFlags) != 0 {
            return Err(Errno::from_raw_os_error(last_errno()));
        }
    }
    Ok(())
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The Landlock ABI version the kernel offers (0: none). Uses
/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`.
pub fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with a NULL attribute pointer, size 0 and the VERSION flag the
    // kernel reads nothing and returns the ABI version or an error.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(ret).unwrap_or(0)
}

/// `ioctl(fd, TIOCSTI, &byte)`: pushes a byte into a terminal's input.
pub fn tiocsti(fd: BorrowedFd<'_>, byte: u8) -> Result<(), Errno> {
    // SAFETY: TIOCSTI reads one byte through the pointer, which points at a
    // live local.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSTI, &byte as *const u8) };
    if ret == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(last_errno()))
    }
}

/// `unshare(flags)` for the namespace flags; CLONE_FILES and the other
/// flags that unshare per-process state are refused (EINVAL).
pub fn unshare_namespaces(flags: rustix::thread::UnshareFlags) -> Result<(), Errno> {
    faked!("unshare", Ok(()));
    use rustix::thread::UnshareFlags as F;
    let namespaces = F::NEWNS | F::NEWUSER | F::NEWNET | F::NEWIPC | F::NEWUTS | F::NEWPID | F::NEWCGROUP;
    if !namespaces.contains(flags) {
        return Err(Errno::INVAL);
    }
    // SAFETY: unshare is unsafe for CLONE_FILES (fds Rust code holds could
    // be closed under it) and CLONE_FS; only namespace flags pass the check
    // above, and they change no state Rust code relies on.
    unsafe { rustix::thread::unshare_unsafe(flags) }
}

/// `fork()`: `Ok(None)` in the child, `Ok(Some(pid))` in the parent.
pub fn fork() -> Result<Option<i32>, Errno> {
    // The fake answers as the child, the side that goes on with the setup.
    fake_thread_count();
    faked!("clone", Ok(None));
    single_threaded()?;
    // SAFETY: the process has one thread (checked just above), so the child
    // is a consistent copy of the parent and may go on running Rust code.
    match unsafe { libc::fork() } {
        -1 => Err(Errno::from_raw_os_error(last_errno())),
        0 => Ok(None),
        pid => Ok(Some(pid)),
    }
}

static FORWARD_TO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
static FORWARD_KERNEL_SENT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let pid = FORWARD_TO.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the kernel hands an SA_SIGINFO handler a valid siginfo_t.
    let code = unsafe { info.as_ref() }.map_or(0, |i| i.si_code);
    // SI_USER, SI_QUEUE, SI_TKILL (<= 0): a process sent it; above 0 the
    // kernel did (a terminal's ^C reaches the child itself already).
    let by_process = code <= 0;
    if pid > 0 && (by_process || FORWARD_KERNEL_SENT.load(std::sync::atomic::Ordering::Relaxed)) {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

/// The signals a supervising parent passes on to its child.
pub const FORWARDED_SIGNALS: [i32; 8] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
    libc::SIGCONT,
];

/// Makes this process pass the usual termination and job-control signals on
/// to `child`; `only_sent_by_processes`: not those the kernel sends (a
/// terminal's, which reach a child in the same process group by
/// themselves).
pub fn forward_signals_to(child: i32, only_sent_by_processes: bool) -> Result<(), Errno> {
    faked!("rt_sigaction", Ok(()));
    FORWARD_TO.store(child, std::sync::atomic::Ordering::Relaxed);
    FORWARD_KERNEL_SENT.store(!only_sent_by_processes, std::sync::atomic::Ordering::Relaxed);
    for sig in FORWARDED_SIGNALS {
        // SAFETY: the handler only reads an atomic and calls kill(2), both
        // async-signal-safe; the sigaction struct is fully initialised.
        let ret = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = forward as *const () as usize;
            sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if ret != 0 {
            return Err(Errno::from_raw_os_error(last_errno()));
        }
    }
    Ok(())
}

/// Ends this process the way a child ended: the same exit code, or death by
/// the same signal.
pub fn exit_like(code: Option<i32>, signal: Option<i32>) -> ! {
    if let Some(sig) = signal {
        // SAFETY: restoring the default disposition and signalling ourselves
        // has no memory-safety preconditions.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
        }
        std::process::exit(128 + sig);
    }
    std::process::exit(code.unwrap_or(1))
}

/// `unshare(CLONE_NEWUSER|CLONE_NEWNS)` for the verify probe's nested-remount
/// attempt, which runs in a throwaway child process.
pub fn unshare_user_mount() -> Result<(), Errno> {
    use rustix::thread::UnshareFlags;
    // SAFETY: CLONE_FILES is not among the flags, and the probe child is
    // single-threaded.
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }
}

/// Reads to its end an fd the caller handed over by number (bubblewrap's
/// `--args FD`, `--file FD`, `--seccomp FD`), then closes it.
pub fn read_inherited_fd(fd: i32) -> std::io::Result<Vec<u8>> {
    faked!("read", Ok(Vec::new()));
    use std::io::Read;
    use std::os::fd::FromRawFd;
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the fd is open (checked just above, and qwrap is
    // single-threaded); the caller gave it to us to consume, so taking
    // ownership (and closing it when done) is what it asked for.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut v = Vec::new();
    f.read_to_end(&mut v)?;
    Ok(v)
}

/// `clone(flags|SIGCHLD)` without CLONE_VM: a fork whose child starts in new
/// namespaces (a new PID namespace makes it PID 1 there). `Ok(None)` in the
/// child, `Ok(Some(pid))` in the parent.
pub fn clone_fork(flags: u64) -> Result<Option<i32>, Errno> {
    fake_thread_count();
    faked!("clone", Ok(None));
    raw_clone(flags | libc::SIGCHLD as u64)
}

/// The recording fake's record of `single_threaded`'s two calls.
fn fake_thread_count() {
    if fake::takes("openat") {
        fake::takes("read");
    }
}

/// Refuses (EBUSY) when this process has more than one thread: a child
/// forked from a threaded process may find a lock another thread held, so
/// every fork here runs Rust code only after this check. The count is the
/// kernel's (`/proc/self/stat`), not a flag qwrap keeps, so a thread any
/// library started counts too.
pub fn single_threaded() -> Result<(), Errno> {
    let fd = rustix::fs::open(
        "/proc/self/stat",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let mut buf = [0u8; 1024];
    let n = rustix::io::read(&fd, &mut buf)?;
    let stat = &buf[..n];
    let end = stat.iter().rposition(|&b| b == b')').ok_or(Errno::IO)?;
    // num_threads is the 20th field, the 18th after the comm.
    let threads = std::str::from_utf8(&stat[end + 2..])
        .ok()
        .and_then(|rest| rest.split_whitespace().nth(17))
        .and_then(|n| n.parse::<u32>().ok())
        .ok_or(Errno::IO)?;
    if threads == 1 { Ok(()) } else { Err(Errno::BUSY) }
}

/// A child that is not this process's child: an intermediate forks it and
/// exits at once (reaped here), so the kernel hands it to init or the
/// nearest subreaper, and whatever this process becomes (the command)
/// never sees it among its children. `Ok(None)` in that grandchild.
pub fn fork_detached() -> Result<Option<()>, Errno> {
    // The fake answers as the parent: the grandchild is the warden.
    fake_thread_count();
    faked!("clone", Ok(Some(())));
    match raw_clone(libc::SIGCHLD as u64)? {
        Some(mid) => {
            let mid = rustix::process::Pid::from_raw(mid).ok_or(Errno::SRCH)?;
            loop {
                match rustix::process::waitpid(Some(mid), rustix::process::WaitOptions::empty()) {
                    Ok(Some((_, st))) if st.exit_status() == Some(0) => return Ok(Some(())),
                    Ok(Some(_)) => return Err(Errno::CHILD),
                    Ok(None) | Err(Errno::INTR) => continue,
                    Err(e) => return Err(e),
                }
            }
        }
        // A child just forked has one thread: no second check.
        None => match raw_clone_unchecked(libc::SIGCHLD as u64) {
            Ok(None) => Ok(None),
            // SAFETY: _exit ends the intermediate at once, running no Rust
            // destructors twice.
            Ok(Some(_)) => unsafe { libc::_exit(0) },
            Err(_) => unsafe { libc::_exit(1) },
        },
    }
}

/// `ioctl(NS_GET_PARENT)`: the user namespace that owns `ns` (EPERM above
/// the caller's own).
pub fn ns_get_parent(ns: BorrowedFd<'_>) -> Result<rustix::fd::OwnedFd, Errno> {
    const NS_GET_PARENT: libc::c_ulong = 0xb702;
    // SAFETY: NS_GET_PARENT takes no argument and returns a new descriptor.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_PARENT) };
    if fd < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: a new descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { <rustix::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// clone(2) without CLONE_VM, with the given flags and exit signal.
fn raw_clone(flags: u64) -> Result<Option<i32>, Errno> {
    single_threaded()?;
    raw_clone_unchecked(flags)
}

/// `raw_clone` where the caller knows it has one thread.
fn raw_clone_unchecked(flags: u64) -> Result<Option<i32>, Errno> {
    // SAFETY: without CLONE_VM the child gets a copy of the address space,
    // exactly as with fork(2); the process has one thread (checked by the
    // caller: `raw_clone`, or a child just forked), so that copy is
    // consistent. A NULL stack means "the current stack, copied".
    let ret = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_int>(),
            std::ptr::null_mut::<libc::c_int>(),
            0usize,
        )
    };
    match ret {
        -1 => Err(Errno::from_raw_os_error(last_errno())),
        0 => Ok(None),
        pid => Ok(Some(pid as i32)),
    }
}

/// Writes all of `data` to an fd handed over by number, without closing it.
pub fn write_inherited_fd(fd: i32, data: &[u8]) -> Result<(), Errno> {
    faked!("write", Ok(()));
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: the fd is open (checked above; single-threaded) and stays
    // open for this borrow, which ends before we return.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut rest = data;
    while !rest.is_empty() {
        match rustix::io::write(b, rest) {
            Ok(n) => rest = &rest[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Closes an fd handed over by number (bubblewrap closes --info-fd).
pub fn close_inherited_fd(fd: i32) {
    if fake::takes("close") {
        return;
    }
    // SAFETY: closing a descriptor number the caller handed to us; nothing
    // in qwrap holds it.
    unsafe { libc::close(fd) };
}

/// Blocks until `fd` has data (or EOF): bubblewrap's `--block-fd`.
pub fn block_on_fd(fd: i32) -> Result<(), Errno> {
    faked!("read", Ok(()));
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: reads at most one byte into a live local buffer.
        let n = unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) };
        if n >= 0 {
            return Ok(());
        }
        let e = last_errno();
        if e != libc::EINTR {
            return Err(Errno::from_raw_os_error(e));
        }
    }
}

/// `fcntl(fd, F_SETLK, {F_RDLCK, whole file})`, as bubblewrap's --lock-file.
pub fn read_lock(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    faked!("fcntl", Ok(()));
    // SAFETY: a zeroed flock is valid; the fields set describe a read lock
    // on the whole file, and the kernel only reads the struct.
    let ret = unsafe {
        let mut lock: libc::flock = std::mem::zeroed();
        lock.l_type = libc::F_RDLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        libc::fcntl(fd.as_raw_fd(), libc::F_SETLK, &lock as *const libc::flock)
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(last_errno()))
    }
}

/// `setns(fd, CLONE_NEWUSER or CLONE_NEWPID)` on an fd handed over by
/// number (bubblewrap's `--userns`, `--userns2`, `--pidns`).
pub fn setns_inherited_fd(fd: i32, pid: bool) -> Result<(), Errno> {
    faked!("setns", Ok(()));
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: the fd is open (checked above; single-threaded) for the
    // duration of this borrow.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    let kind = if pid {
        rustix::thread::LinkNameSpaceType::ProcessID
    } else {
        rustix::thread::LinkNameSpaceType::User
    };
    rustix::thread::move_into_link_name_space(b, Some(kind))
}

/// What std's runtime would do before `main` and qwrap relies on (the binary
/// skips that runtime: it reads /proc/self/maps and sets up a stack-overflow
/// handler, ~40 µs of every tool call). Fds 0–2 are made to exist, on
/// /dev/null when the caller closed them, so that no file opened during setup
/// lands there and receives what is meant for stdout or stderr; SIGPIPE is
/// ignored so that a closed reader is an EPIPE error, not a silent death.
pub fn init_process() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    let closed: Vec<i32> = loop {
        // SAFETY: poll reads and writes only the three pollfd entries of the
        // array passed with its exact length, and does not keep the pointer.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        if r >= 0 {
            break fds
                .iter()
                .filter(|p| p.revents & libc::POLLNVAL != 0)
                .map(|p| p.fd)
                .collect();
        }
        if last_errno() != libc::EINTR {
            // poll refused (e.g. RLIMIT_NOFILE of 0): ask fcntl fd by fd.
            // SAFETY: F_GETFD only queries the descriptor table.
            break (0..3)
                .filter(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 && last_errno() == libc::EBADF)
                .collect();
        }
    };
    for fd in closed {
        // The lowest free descriptor is the closed one, as they are filled
        // in order.
        match rustix::fs::open("/dev/null", rustix::fs::OFlags::RDWR, rustix::fs::Mode::empty()) {
            Ok(null) if null.as_raw_fd() == fd => std::mem::forget(null),
            _ => std::process::abort(),
        }
    }
    // SAFETY: SIG_IGN installs no handler code, it only changes SIGPIPE's
    // disposition. An ignored signal stays ignored across execve: the Exec
    // step (sys::exec_after_filters) restores SIG_DFL for the command.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// `kill(-1, SIGKILL)`: every process this one may signal but itself (and
/// init). The warden calls it from the signal domain it shares with the
/// sandbox, where that is exactly the sandbox's processes.
pub fn kill_everything_reachable() {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(-1, libc::SIGKILL) };
}

/// Every route to a signal verify knows, aimed at `pid` with signal 0 (or
/// setting a socket's SIGIO owner to it): each call's result, by name.
/// `owners`: also the calls that set a file's owner (the kernel's to
/// refuse only at delivery where Landlock scopes signals).
pub fn signal_routes(pid: i32, owners: bool) -> Vec<(&'static str, Result<(), Errno>)> {
    let res = |r: libc::c_long| {
        if r < 0 {
            Err(Errno::from_raw_os_error(last_errno()))
        } else {
            Ok(())
        }
    };
    let mut v = Vec::new();
    // SAFETY: signal 0 is only a permission check; no pointer arguments.
    v.push(("kill", res(unsafe { libc::syscall(libc::SYS_kill, pid, 0) })));
    // SAFETY: as above.
    v.push((
        "tgkill",
        res(unsafe { libc::syscall(libc::SYS_tgkill, pid, pid, 0) }),
    ));
    // SAFETY: pidfd_open takes no pointer; the fd is closed below.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd >= 0 {
        // SAFETY: a NULL siginfo asks the kernel to fill it in.
        let r = unsafe { libc::syscall(libc::SYS_pidfd_send_signal, pidfd, 0, std::ptr::null::<u8>(), 0) };
        v.push(("pidfd_send_signal", res(r)));
        // SAFETY: a descriptor this function opened and nothing else owns.
        unsafe { libc::close(pidfd as i32) };
    }
    if !owners {
        return v;
    }
    let Ok((a, _b)) = rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::STREAM,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    ) else {
        return v;
    };
    let fd = a.as_raw_fd();
    let owner_ex: [libc::c_int; 2] = [1, pid]; // F_OWNER_PID
    let one: libc::c_int = 1;
    // SAFETY: fcntl on a socket this function owns; F_SETOWN takes an int.
    v.push((
        "F_SETOWN",
        res(unsafe { libc::fcntl(fd, libc::F_SETOWN, pid) }.into()),
    ));
    // SAFETY: F_SETOWN_EX reads a struct f_owner_ex that outlives the call.
    v.push((
        "F_SETOWN_EX",
        res(unsafe { libc::fcntl(fd, 15, owner_ex.as_ptr()) }.into()),
    ));
    // SAFETY: the ioctls read one int that outlives the call.
    v.push(("FIOSETOWN", res(unsafe { libc::ioctl(fd, 0x8901, &pid) }.into())));
    // SAFETY: as above.
    v.push(("SIOCSPGRP", res(unsafe { libc::ioctl(fd, 0x8902, &pid) }.into())));
    // SAFETY: as above.
    v.push((
        "FIOASYNC",
        res(unsafe { libc::ioctl(fd, libc::FIOASYNC, &one) }.into()),
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::thread::UnshareFlags;

    #[test]
    fn unshare_refuses_what_is_not_a_namespace() {
        for f in [
            UnshareFlags::FILES,
            UnshareFlags::FS,
            UnshareFlags::NEWNS | UnshareFlags::FILES,
        ] {
            assert_eq!(unshare_namespaces(f), Err(Errno::INVAL), "{f:?}");
        }
    }
}
