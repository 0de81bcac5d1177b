//! Processes: forks that check for a single thread first, clone into new
//! namespaces, signals passed on to a child, ending as a child ended, and
//! the leftovers' ends (PID 1's kill, every route a signal can take).

use super::*;
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
/// The forwarded signals the caller ignored (bit `sig`), learnt at the
/// first call (bit 0: learnt): left ignored here and in the command, as an
/// exec would leave them (`nohup`, a background job's SIGINT).
static IGNORED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// A signal that came before there was a child to pass it to.
static PENDING: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let pid = FORWARD_TO.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the kernel hands an SA_SIGINFO handler a valid siginfo_t.
    let code = unsafe { info.as_ref() }.map_or(0, |i| i.si_code);
    // SI_USER, SI_QUEUE, SI_TKILL (<= 0): a process sent it; above 0 the
    // kernel did: a terminal's ^C reaches the child itself already, unless
    // the child left the session (PID 1 of a private PID namespace starts
    // one of its own where the command holds no terminal).
    let by_process = code <= 0;
    // SAFETY: getsid(2) is async-signal-safe and takes no memory.
    let elsewhere = || pid > 0 && unsafe { libc::getsid(pid) != libc::getsid(0) };
    if !(by_process || FORWARD_KERNEL_SENT.load(std::sync::atomic::Ordering::Relaxed) || elsewhere()) {
        return;
    }
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    } else {
        PENDING.store(sig, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The caller's session ID, 0 when the session's leader lies outside the
/// caller's PID namespace (a container's shell, `unshare --pid --fork`):
/// rustix's `getsid` cannot hold a 0.
pub fn session_id() -> i32 {
    // SAFETY: getsid(0) takes no memory and cannot fail for the caller.
    unsafe { libc::getsid(0) }
}

/// The caller's process group ID, 0 when its leader lies outside the
/// caller's PID namespace (rustix's `getpgrp` cannot hold a 0).
pub fn process_group() -> i32 {
    // SAFETY: getpgrp(2) takes no memory and cannot fail.
    unsafe { libc::getpgrp() }
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

/// Until `forward_signals_to` names a child, the signals it passes on are
/// kept (the last one), so that one sent while the sandbox is being set up
/// reaches the command once it runs (PID 1 of a new PID namespace would
/// otherwise ignore it).
pub fn hold_signals() -> Result<(), Errno> {
    forward_signals_to(0, true)
}

/// In a child that is to become the command: the signals' default actions
/// back, and one kept meanwhile raised, so that nothing sent to it before
/// its execve is swallowed by the handler it inherited.
pub fn stop_forwarding() {
    if fake::takes("rt_sigaction") {
        return;
    }
    let ignored = caller_ignored();
    for sig in FORWARDED_SIGNALS {
        let keep = if ignored & (1 << sig) != 0 {
            libc::SIG_IGN
        } else {
            libc::SIG_DFL
        };
        // SAFETY: restoring a default or ignored disposition has no
        // memory-safety preconditions.
        unsafe { libc::signal(sig, keep) };
    }
    let pending = PENDING.swap(0, std::sync::atomic::Ordering::Relaxed);
    if pending != 0 {
        // SAFETY: as above; the signal is this process's own.
        unsafe { libc::kill(libc::getpid(), pending) };
    }
}

/// Makes this process pass the usual termination and job-control signals on
/// to `child` (and the one kept since `hold_signals`, at once);
/// `only_sent_by_processes`: not those the kernel sends (a terminal's, which
/// reach a child in the same process group by themselves).
pub fn forward_signals_to(child: i32, only_sent_by_processes: bool) -> Result<(), Errno> {
    faked!("rt_sigaction", Ok(()));
    FORWARD_TO.store(child, std::sync::atomic::Ordering::Relaxed);
    FORWARD_KERNEL_SENT.store(!only_sent_by_processes, std::sync::atomic::Ordering::Relaxed);
    let ignored = caller_ignored();
    for sig in FORWARDED_SIGNALS.into_iter().filter(|s| ignored & (1 << s) == 0) {
        // SAFETY: the handler only loads and stores atomics and calls
        // kill(2), all async-signal-safe; the sigaction struct is fully
        // initialised.
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
    let pending = PENDING.swap(0, std::sync::atomic::Ordering::Relaxed);
    if child > 0 && pending != 0 {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(child, pending) };
    }
    Ok(())
}

/// The forwarded signals the caller left ignored, read once, before any
/// handler of ours replaced them.
fn caller_ignored() -> u64 {
    use std::sync::atomic::Ordering::Relaxed;
    let known = IGNORED.load(Relaxed);
    if known & 1 != 0 {
        return known;
    }
    let mut ignored = 1u64;
    for sig in FORWARDED_SIGNALS {
        // SAFETY: a null new action only reads the current one into `old`,
        // a zeroed sigaction the call fills.
        let old = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old);
            old
        };
        if old.sa_sigaction == libc::SIG_IGN {
            ignored |= 1 << sig;
        }
    }
    IGNORED.store(ignored, Relaxed);
    ignored
}

/// Ends this process the way a child ended: the same exit code, or death by
/// the same signal.
pub fn exit_like(code: Option<i32>, signal: Option<i32>) -> ! {
    if let Some(sig) = signal {
        // No core of this process, whatever the caller's limit: it holds the
        // caller's environment and heap, and it would land in the
        // workspace, where the next sandbox reads it (the command wrote
        // its own core, if any, when it died).
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit reads the struct it is given, prctl takes
        // integers; restoring the default disposition and signalling
        // ourselves has no memory-safety preconditions.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
        }
        std::process::exit(128 + sig);
    }
    std::process::exit(code.unwrap_or(1))
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
pub(super) fn fake_thread_count() {
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

/// PID 1 of a PID namespace: reaps every child (orphans are its children)
/// until none is left, and returns how `child` ended. Once `child` has
/// ended, signals are held, not passed on: its pid may be another's by then.
pub fn reap_all_children(child: i32) -> Result<rustix::process::WaitStatus, Errno> {
    let mut ended = None;
    // Any child (rustix's `waitpid(None)` is the caller's process group
    // only), and __WALL: the warden's intermediate is a clone child that
    // sends no SIGCHLD.
    let all = rustix::process::WaitOptions::from_bits_retain(libc::__WALL as u32);
    loop {
        match kernel::wait(all) {
            Ok(Some((pid, status))) => {
                if pid.as_raw_nonzero().get() == child {
                    hold_signals()?;
                    ended = Some(status);
                }
            }
            Ok(None) | Err(Errno::INTR) => continue,
            Err(Errno::CHILD) => return ended.ok_or(Errno::CHILD),
            Err(e) => return Err(e),
        }
    }
}

/// Waits for one child to end, through interruptions.
pub fn wait_child(pid: i32) -> Result<rustix::process::WaitStatus, Errno> {
    let child = rustix::process::Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    loop {
        match kernel::waitpid(Some(child), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(status),
            Ok(None) | Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
}
