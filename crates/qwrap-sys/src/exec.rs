//! The command's execve, after the caller's seccomp filters: nothing but
//! execve runs once they are in place (bubblewrap's order), so everything
//! is allocated first and the filters go in with prctl(PR_SET_SECCOMP),
//! which each filter but the last must allow.

use rustix::io::Errno;
use std::ffi::CString;

/// Installs each program, in order, on this thread.
pub fn apply_filters(filters: &[Vec<libc::sock_filter>]) -> Result<(), Errno> {
    if !filters.is_empty() && super::fake::takes("prctl") {
        return Ok(());
    }
    for f in filters {
        let prog = libc::sock_fprog {
            len: u16::try_from(f.len()).map_err(|_| Errno::INVAL)?,
            filter: f.as_ptr().cast_mut(),
        };
        // SAFETY: the kernel copies the program during the call; `prog`
        // points at `f`'s instructions, which outlive the call.
        let r = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &prog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(Errno::from_raw_os_error(super::last_errno()));
        }
    }
    Ok(())
}

/// Resets SIGPIPE (ignored by qwrap itself) and the signal mask, installs
/// `filters`, then tries each candidate path as execvp does. Returns only
/// on failure: EACCES if some candidate was refused so, else the last error.
pub fn exec_after_filters(
    candidates: &[CString],
    argv: &[CString],
    envp: &[CString],
    filters: &[Vec<libc::sock_filter>],
) -> Errno {
    // The fake never replaces the test: it answers ENOEXEC.
    if super::fake::takes("rt_sigprocmask") {
        let _ = apply_filters(filters);
        super::fake::takes("execve");
        return Errno::NOEXEC;
    }
    let argv_p: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp_p: Vec<*const libc::c_char> = envp
        .iter()
        .map(|e| e.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // SAFETY: SIG_DFL installs no handler; the set is initialised by
    // sigemptyset before sigprocmask reads it.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
    if let Err(e) = apply_filters(filters) {
        return e;
    }

    let (mut last, mut refused) = (libc::ENOENT, false);
    for c in candidates {
        // SAFETY: every pointer names a NUL-terminated string owned by the
        // caller's vectors, and both arrays end with NULL, as execve needs.
        unsafe { libc::execve(c.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr()) };
        last = super::last_errno();
        match last {
            libc::ENOENT | libc::ENOTDIR => {}
            libc::EACCES => refused = true,
            _ => break,
        }
    }
    Errno::from_raw_os_error(if refused && matches!(last, libc::ENOENT | libc::ENOTDIR) {
        libc::EACCES
    } else {
        last
    })
}
