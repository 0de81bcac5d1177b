//! Installs the seccomp filter, compiled to BPF at build time from the rules
//! filter_rules.rs derives from its syscall table (syscalls.tsv): terminal
//! injection and setuid/setgid mode bits fail with EPERM, openat2 and
//! io_uring with ENOSYS, every syscall newer than the table with ENOSYS,
//! and, in `run`, calls aimed at another process go to the warden. One
//! program, one seccomp(2).

use super::Fail;
use crate::plan::filter_rules::Profile;
use rustix::io::Errno;

// Each profile's compiled program (`[(u16, u8, u8, u32); N]`, named as
// `Profile::all()` names it) and `compiled`, the one lookup from a profile
// to its program, both written by build.rs.
include!(concat!(env!("OUT_DIR"), "/seccomp_bpf.rs"));

/// A profile's program; a profile build.rs did not compile is the plan's
/// error, refused before any filter is installed.
fn program(p: Profile) -> Result<&'static [(u16, u8, u8, u32)], Fail> {
    compiled(p).ok_or_else(|| Fail::with(Errno::INVAL, format!("no compiled seccomp program for {p:?}")))
}

/// Installs a filter whose notifications go nowhere: bwrap mode's layers,
/// or `run --pid private`'s (no host process can be named from inside).
pub(super) fn apply(p: Profile) -> Result<(), Fail> {
    crate::sys::kernel::seccomp_filter(program(p)?)
        .map_err(|e| Fail::call("seccomp", "SECCOMP_SET_MODE_FILTER", e))
}

/// Installs `run`'s filter, the warden's rules included, and returns its
/// listener.
pub(super) fn notify_listener(p: Profile) -> Result<rustix::fd::OwnedFd, Fail> {
    crate::sys::seccomp_listener(program(p)?).map_err(|e| {
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
        program(Profile {
            explain: true,
            ..Profile::PLAIN
        })?
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
                apply(Profile::PLAIN)?;
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
