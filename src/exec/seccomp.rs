//! Installs the seccomp filter, compiled to BPF at build time from the rules
//! filter_rules.rs derives from its syscall table (syscalls.tsv): terminal
//! injection and setuid/setgid mode bits fail with EPERM, openat2 and
//! io_uring with ENOSYS, every syscall newer than the table with ENOSYS,
//! and, in `run`, calls aimed at another process go to the warden. One
//! program, one seccomp(2).

use super::Fail;

// `PROGRAM` (no warden, scoped, not root: bwrap mode's, and a private PID
// namespace's), `NOTIFY[_UNSCOPED][_ROOT]_PROGRAM` and the other
// `PIDNS_…_PROGRAM`s: `[(u16, u8, u8, u32); N]`,
// written by build.rs for each of `Profile::all()`.
include!(concat!(env!("OUT_DIR"), "/seccomp_bpf.rs"));

/// Installs the filter without the warden's rules (bwrap mode's layers; no
/// no_new_privs needed beyond what the caller set).
pub(super) fn apply() -> Result<(), Fail> {
    crate::sys::kernel::seccomp_filter(program(false, false, false))
        .map_err(|e| Fail::call("seccomp", "SECCOMP_SET_MODE_FILTER", e))
}

/// Installs `run`'s filter for a private PID namespace: no notifications
/// (no host process can be named from inside); `unscoped`: the SIGIO owner
/// calls refused; `root`: extended attributes refused.
pub(super) fn apply_private_pid(unscoped: bool, root: bool) -> Result<(), Fail> {
    crate::sys::kernel::seccomp_filter(program(false, unscoped, root))
        .map_err(|e| Fail::call("seccomp", "SECCOMP_SET_MODE_FILTER", e))
}

/// Installs the whole filter, the warden's rules included, and returns its
/// listener. `unscoped`: no Landlock signal scope (signals and SIGIO
/// owners are held here); `root`: extended attributes refused.
pub(super) fn notify_listener(
    unscoped: bool,
    root: bool,
    landlock_only: bool,
    explain: bool,
) -> Result<rustix::fd::OwnedFd, Fail> {
    let program = match (explain, landlock_only) {
        (true, true) => explain_landlock_program(unscoped, root),
        (true, false) => explain_program(unscoped, root),
        (false, true) => landlock_program(unscoped, root),
        (false, false) => program(true, unscoped, root),
    };
    crate::sys::seccomp_listener(program).map_err(|e| {
        Fail::call(
            "seccomp",
            "SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER",
            e,
        )
    })
}

/// bwrap mode with `QWRAP_EXPLAIN`: the filter whose listener goes to the
/// monitor, its layers' rules folded in (`layers`) or none refused. None
/// where a filter around this sandbox has a listener already (EBUSY: the
/// kernel allows one per chain), which hears these calls too: the layers'
/// filter alone then, or none.
pub(super) fn monitor_listener(layers: bool) -> Result<Option<rustix::fd::OwnedFd>, Fail> {
    let program: &[(u16, u8, u8, u32)] = if layers {
        &EXPLAIN_BWRAP_PROGRAM
    } else {
        &WATCH_PROGRAM
    };
    match crate::sys::seccomp_listener(program) {
        Ok(l) => Ok(Some(l)),
        Err(rustix::io::Errno::BUSY) => {
            eprintln!(
                "bwrap: QWRAP_EXPLAIN: a filter around this sandbox has a listener already, and it hears these calls: no refusals are said here"
            );
            if layers {
                apply()?;
            }
            Ok(None)
        }
        Err(e) => Err(Fail::call(
            "seccomp",
            "SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER",
            e,
        )),
    }
}

/// `--isolation landlock`'s second filter (Unix sockets, every socket when
/// `closed`, keyrings, SysV IPC, message queues refused), stacked on the
/// first.
pub(super) fn apply_landlock_only(closed: bool) -> Result<(), Fail> {
    let program: &[(u16, u8, u8, u32)] = if closed {
        &LANDLOCK_ONLY_CLOSED_PROGRAM
    } else {
        &LANDLOCK_ONLY_OPEN_PROGRAM
    };
    crate::sys::kernel::seccomp_filter(program)
        .map_err(|e| Fail::call("seccomp", "SECCOMP_SET_MODE_FILTER", e))
}

/// The keyring filter (keyctl, add_key, request_key: EPERM), stacked on
/// the first: the caller's keyrings stay out of reach and no keyring is
/// made for the sandbox.
pub(super) fn apply_keyring_refusal() -> Result<(), Fail> {
    crate::sys::kernel::seccomp_filter(&KEYRING_PROGRAM)
        .map_err(|e| Fail::call("seccomp", "SECCOMP_SET_MODE_FILTER", e))
}

/// The compiled program of a Landlock-only profile (the warden's, with
/// mode bits and times handed to it too).
fn landlock_program(unscoped: bool, root: bool) -> &'static [(u16, u8, u8, u32)] {
    match (unscoped, root) {
        (false, false) => &NOTIFY_LANDLOCK_PROGRAM,
        (false, true) => &NOTIFY_LANDLOCK_ROOT_PROGRAM,
        (true, false) => &NOTIFY_LANDLOCK_UNSCOPED_PROGRAM,
        (true, true) => &NOTIFY_LANDLOCK_UNSCOPED_ROOT_PROGRAM,
    }
}

/// `--explain`'s program of a Landlock-only profile.
fn explain_landlock_program(unscoped: bool, root: bool) -> &'static [(u16, u8, u8, u32)] {
    match (unscoped, root) {
        (false, false) => &EXPLAIN_NOTIFY_LANDLOCK_PROGRAM,
        (false, true) => &EXPLAIN_NOTIFY_LANDLOCK_ROOT_PROGRAM,
        (true, false) => &EXPLAIN_NOTIFY_LANDLOCK_UNSCOPED_PROGRAM,
        (true, true) => &EXPLAIN_NOTIFY_LANDLOCK_UNSCOPED_ROOT_PROGRAM,
    }
}

/// `--explain`'s program of a warden profile.
fn explain_program(unscoped: bool, root: bool) -> &'static [(u16, u8, u8, u32)] {
    match (unscoped, root) {
        (false, false) => &EXPLAIN_NOTIFY_PROGRAM,
        (false, true) => &EXPLAIN_NOTIFY_ROOT_PROGRAM,
        (true, false) => &EXPLAIN_NOTIFY_UNSCOPED_PROGRAM,
        (true, true) => &EXPLAIN_NOTIFY_UNSCOPED_ROOT_PROGRAM,
    }
}

/// The compiled program of a profile (`Profile { warden, unscoped, root }`).
fn program(warden: bool, unscoped: bool, root: bool) -> &'static [(u16, u8, u8, u32)] {
    match (warden, unscoped, root) {
        (false, false, false) => &PROGRAM,
        (false, false, true) => &PIDNS_ROOT_PROGRAM,
        (false, true, false) => &PIDNS_UNSCOPED_PROGRAM,
        (false, true, true) => &PIDNS_UNSCOPED_ROOT_PROGRAM,
        (true, false, false) => &NOTIFY_PROGRAM,
        (true, false, true) => &NOTIFY_ROOT_PROGRAM,
        (true, true, false) => &NOTIFY_UNSCOPED_PROGRAM,
        (true, true, true) => &NOTIFY_UNSCOPED_ROOT_PROGRAM,
    }
}

/// A caller's program (bubblewrap's `--seccomp FD`, a raw array of
/// `struct sock_filter`) as the kernel takes it; a trailing partial
/// instruction (refused while parsing) is dropped.
pub(super) fn from_bytes(data: &[u8]) -> Vec<libc::sock_filter> {
    data.chunks_exact(8)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect()
}

#[cfg(test)]
#[path = "seccomp_tests.rs"]
mod tests;
