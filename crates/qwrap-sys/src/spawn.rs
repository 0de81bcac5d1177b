//! A detached process (the warden, the reaper) started with one copy of the
//! address space: an intermediate that shares this process's memory and
//! descriptor table (`CLONE_VM|CLONE_VFORK|CLONE_FILES`, on a stack of its
//! own, this process suspended until it exits) forks the new process with
//! `CLONE_PIDFD` and exits. The new process is no child of this one (the
//! command never sees it among its children), its pid and pidfd come back
//! through the shared memory and table, with no pipe to wait on. A fork
//! from this process and another from its child cost twice the copy and a
//! teardown (≈ 0.2 ms more per process on a 2-core VM).

use rustix::fd::{FromRawFd, OwnedFd};
use rustix::io::Errno;
use rustix::process::Pid;
use std::convert::Infallible;

/// The intermediate's stack: mapped lazily, so only what the new process
/// touches costs; its lowest page a guard.
const STACK: usize = 8 << 20;
const GUARD: usize = 4096;

/// What the intermediate reads and writes in the memory it shares.
#[repr(C)]
struct Shared {
    /// Runs the new process's code (`data` is its `Option<F>`).
    call: unsafe fn(*mut libc::c_void) -> !,
    data: *mut libc::c_void,
    /// Instead: the reaper, cloned with CLONE_VM onto a stack of its own
    /// (its top), given its orders (`arg`).
    light: Option<(*mut libc::c_void, *mut libc::c_void)>,
    /// The caller's signal mask, restored in the new process.
    mask: libc::sigset_t,
    pid: libc::c_int,
    pidfd: libc::c_int,
    errno: libc::c_int,
}

/// Starts `child` (which never returns: it ends with `exit_now`) in a new process that is not this
/// process's child; returns its pid and a pidfd of it. Refused (EBUSY)
/// when this process has more than one thread.
pub fn spawn_detached<F: FnOnce() -> Infallible>(child: F) -> Result<(Pid, OwnedFd), Errno> {
    // The fake answers as the caller: the new process is the warden.
    super::process::fake_thread_count();
    #[cfg(feature = "record")]
    if super::fake::takes("clone") {
        return Ok((Pid::INIT, super::fake::fd()));
    }
    super::process::single_threaded()?;
    let mut slot = Some(child);
    launch(run::<F>, (&mut slot as *mut Option<F>).cast(), None)
}

/// Runs the intermediate with every signal blocked (no handler may run in
/// it, on memory it shares), then gives the mask back; the new process's
/// pid and pidfd, or why there is none.
fn launch(
    call: unsafe fn(*mut libc::c_void) -> !,
    data: *mut libc::c_void,
    light: Option<(*mut libc::c_void, *mut libc::c_void)>,
) -> Result<(Pid, OwnedFd), Errno> {
    // SAFETY: sigfillset and pthread_sigmask write only the sets passed.
    let mut shared = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut mask);
        Shared {
            call,
            data,
            light,
            mask,
            pid: 0,
            pidfd: -1,
            errno: 0,
        }
    };
    let result = start(&mut shared);
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &shared.mask, std::ptr::null_mut()) };
    result?;
    if shared.errno != 0 {
        return Err(Errno::from_raw_os_error(shared.errno));
    }
    let pid = Pid::from_raw(shared.pid).ok_or(Errno::SRCH)?;
    // SAFETY: the intermediate stored the pidfd that CLONE_PIDFD installed
    // in the table this process shares with it; nothing else owns it.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(shared.pidfd) }))
}

/// Maps the stack, runs the intermediate on it (this process is suspended
/// until it exits), reaps it and unmaps the stack.
fn start(shared: &mut Shared) -> Result<(), Errno> {
    // SAFETY: an anonymous private mapping, owned here until munmap below.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(Errno::from_raw_os_error(super::last_errno()));
    }
    // SAFETY: the guard page lies in the mapping just made. The clone runs
    // `intermediate` on the mapping's top with `shared`, which outlives it:
    // CLONE_VFORK suspends this thread until the intermediate has exited,
    // and the intermediate touches nothing but `shared`, its own stack and
    // raw syscalls. Signals are blocked meanwhile (the caller's doing).
    let pid = unsafe {
        libc::mprotect(stack, GUARD, libc::PROT_NONE);
        libc::clone(
            intermediate,
            stack.cast::<u8>().add(STACK).cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::SIGCHLD,
            (shared as *mut Shared).cast(),
        )
    };
    let cloned = if pid == -1 {
        Err(Errno::from_raw_os_error(super::last_errno()))
    } else {
        Ok(())
    };
    if pid > 0 {
        let pid = Pid::from_raw(pid).ok_or(Errno::SRCH)?;
        while let Err(Errno::INTR) =
            rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty())
        {}
    }
    // SAFETY: the intermediate has exited; the new process has its own copy
    // of the mapping. This one is unmapped once.
    unsafe { libc::munmap(stack, STACK) };
    cloned
}

/// The intermediate: forks the new process and exits. It shares the
/// caller's memory, so it calls nothing but raw syscalls and writes only
/// `shared`.
extern "C" fn intermediate(arg: *mut libc::c_void) -> libc::c_int {
    let shared = arg.cast::<Shared>();
    let mut pidfd: libc::c_int = -1;
    // SAFETY: `shared` is the caller's, which is suspended until this exits.
    if let Some((stack, orders)) = unsafe { (*shared).light } {
        return light_clone(shared, stack, orders);
    }
    // SAFETY: a fork (no CLONE_VM) of this process onto a copy of its stack;
    // CLONE_PIDFD stores the pidfd in `pidfd`, on this stack.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_PIDFD | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            &mut pidfd as *mut libc::c_int,
            0usize,
            0usize,
        )
    };
    if r == 0 {
        // SAFETY: the new process owns a copy of everything, as after
        // fork(2) from a single thread; `call` and `data` are `run::<F>`
        // and the caller's Option<F>, copied with the rest.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &(*shared).mask, std::ptr::null_mut());
            ((*shared).call)((*shared).data)
        }
    }
    // SAFETY: `shared` outlives the intermediate (the caller is suspended
    // until it exits); exit(2) ends this task alone, running nothing.
    unsafe {
        if r < 0 {
            (*shared).errno = super::last_errno();
        } else {
            (*shared).pid = r as libc::c_int;
            (*shared).pidfd = pidfd;
        }
        libc::syscall(libc::SYS_exit, 0);
    }
    0
}

/// The intermediate's work for the reaper: clone(CLONE_VM|CLONE_PIDFD)
/// onto the reaper's own stack, its pid and pidfd written to `shared`.
fn light_clone(shared: *mut Shared, stack: *mut libc::c_void, orders: *mut libc::c_void) -> libc::c_int {
    let mut pidfd: libc::c_int = -1;
    // SAFETY: `stack` is the top of a mapping made for the reaper and never
    // unmapped; `orders` lies in it. glibc's clone runs `reaper` there and
    // ends that process with exit(2) when it returns.
    let r = unsafe {
        libc::clone(
            reaper,
            stack,
            libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD,
            orders,
            &mut pidfd as *mut libc::c_int,
        )
    };
    // SAFETY: as in `intermediate`.
    unsafe {
        if r < 0 {
            (*shared).errno = super::last_errno();
        } else {
            (*shared).pid = r;
            (*shared).pidfd = pidfd;
        }
        libc::syscall(libc::SYS_exit, 0);
    }
    0
}

/// The reaper's orders, on its own stack.
#[repr(C)]
struct Orders {
    /// A pidfd of the command.
    watch: libc::c_int,
    /// The process whose being out of its signal reach proves the scope
    /// (0: none, and it kills nothing).
    outside: libc::c_int,
}

/// Reaper stack: mapped lazily, its lowest page a guard.
const REAPER_STACK: usize = 64 << 10;

/// Starts the reaper (supervise/reaper.rs) in a new process that is not
/// this process's child and shares its memory (CLONE_VM: no copy of the
/// page tables, ≈ 0.1 ms less than a fork) until this process execs the
/// command; returns its pid and a pidfd of it. In it: a session of its
/// own, 0-2 on /dev/null and every other descriptor but `watch` closed;
/// when the command has exited, and if `outside` is indeed out of its
/// signal reach, kill(-1, SIGKILL). It calls nothing but raw system calls,
/// on its own stack, and reads only its orders: the memory it shares with
/// this process is never touched (no allocation, no errno). Its stack is
/// never unmapped (after the exec the mapping is the reaper's alone).
pub fn spawn_reaper(watch: libc::c_int, outside: Option<i32>) -> Result<(Pid, OwnedFd), Errno> {
    super::process::fake_thread_count();
    #[cfg(feature = "record")]
    if super::fake::takes("clone") {
        return Ok((Pid::INIT, super::fake::fd()));
    }
    super::process::single_threaded()?;
    // SAFETY: an anonymous private mapping of our own, handed to the reaper.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            REAPER_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(Errno::from_raw_os_error(super::last_errno()));
    }
    // SAFETY: the guard page and the orders lie in the mapping just made;
    // the orders sit just above the guard, the stack grows down to them
    // from the top (64 KiB, of which the reaper uses a few hundred bytes).
    let (top, orders) = unsafe {
        libc::mprotect(stack, GUARD, libc::PROT_NONE);
        let orders = stack.cast::<u8>().add(GUARD).cast::<Orders>();
        orders.write(Orders {
            watch,
            outside: outside.unwrap_or(0),
        });
        (stack.cast::<u8>().add(REAPER_STACK).cast(), orders.cast())
    };
    launch(never, std::ptr::null_mut(), Some((top, orders)))
}

/// `Shared::call` where the light clone runs instead.
unsafe fn never(_: *mut libc::c_void) -> ! {
    super::exit_now(1)
}

/// The reaper's body (see spawn_reaper). Every signal stays blocked (the
/// intermediate's mask): only SIGKILL ends it.
extern "C" fn reaper(arg: *mut libc::c_void) -> libc::c_int {
    use rustix::event::{PollFd, PollFlags};
    use rustix::fd::BorrowedFd;
    // SAFETY: `arg` points at the orders written on this process's stack
    // mapping before it was cloned; nothing else writes them.
    let o = unsafe { arg.cast::<Orders>().read() };
    let _ = rustix::process::setsid();
    if let Ok(null) = rustix::fs::open(c"/dev/null", rustix::fs::OFlags::RDWR, rustix::fs::Mode::empty()) {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }
    // SAFETY: close_range on numbers of this process's own table (a copy:
    // no CLONE_FILES); every descriptor but 0-2 and `watch`. It cannot
    // fail on these ranges, so errno (shared memory) is not written.
    unsafe {
        let w = o.watch as libc::c_uint;
        if w > 3 {
            libc::syscall(libc::SYS_close_range, 3u32, w - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, w + 1, u32::MAX, 0u32);
    }
    // SAFETY: `watch` is open in this process's table for its whole life.
    let watch = unsafe { BorrowedFd::borrow_raw(o.watch) };
    let mut fds = [PollFd::new(&watch, PollFlags::IN)];
    while !matches!(rustix::event::poll(&mut fds, None), Ok(n) if n > 0) {}
    let outside = rustix::process::Pid::from_raw(o.outside);
    if outside.is_some_and(|p| rustix::process::test_kill_process(p) == Err(Errno::PERM)) {
        // SAFETY: kill(2): the command's memory is the reaper's alone now.
        unsafe { libc::kill(-1, libc::SIGKILL) };
    }
    0
}

/// The new process: takes the closure out of its copy of the caller's
/// Option and runs it.
///
/// # Safety
/// `data` points to an `Option<F>` that this process owns a copy of.
unsafe fn run<F: FnOnce() -> Infallible>(data: *mut libc::c_void) -> ! {
    // SAFETY: the caller's guarantee.
    match unsafe { (*data.cast::<Option<F>>()).take() } {
        Some(f) => match f() {},
        None => super::exit_now(1),
    }
}

/// `cmd`, once spawned, runs at `nice` (None: the caller's) and, given `data`, with its heap
/// (and private writable mappings) held to that many bytes: both set in
/// the child before its exec, so that nothing of it runs unheld; one that
/// cannot be set fails the spawn.
pub fn held_before_exec(cmd: &mut std::process::Command, nice: Option<i32>, data: Option<u64>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the child between fork and exec; setpriority
    // and setrlimit are async-signal-safe system calls on the child itself,
    // and nothing is allocated or locked.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(nice) = nice {
                rustix::process::setpriority_process(None, nice)?;
            }
            if let Some(bytes) = data {
                let limit = rustix::process::Rlimit {
                    current: Some(bytes),
                    maximum: Some(bytes),
                };
                rustix::process::setrlimit(rustix::process::Resource::Data, limit)?;
            }
            Ok(())
        });
    }
}

/// Runs `cmd` in a session of its own whose controlling terminal is
/// `ctty`, waits for it, then reads what it left on stderr (verify's
/// stand-in for a caller whose terminal is only the controlling one). The
/// wait comes first: a sandbox's warden holds stderr until the last
/// process with the sandbox's filter is gone, which the command is only
/// once reaped.
pub fn spawn_in_session(
    mut cmd: std::process::Command,
    ctty: OwnedFd,
) -> std::io::Result<std::process::Output> {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the child between fork and exec; setsid and
    // TIOCSCTTY are async-signal-safe system calls on a descriptor the
    // child holds, and nothing is allocated or locked.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setsid()?;
            rustix::process::ioctl_tiocsctty(&ctty)?;
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let status = child.wait()?;
    let mut stderr = Vec::new();
    if let Some(mut e) = child.stderr.take() {
        std::io::Read::read_to_end(&mut e, &mut stderr)?;
    }
    Ok(std::process::Output {
        status,
        stdout: Vec::new(),
        stderr,
    })
}
