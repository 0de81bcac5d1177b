//! Applies the planned Landlock ruleset: write-type access only beneath the
//! given paths (and the terminals already open on fds 0-2), and, when
//! scoped, no signals or abstract-socket connections out of the sandbox.

use super::Fail;
use crate::sys::kernel as k;
use crate::sys::landlock::{Domain, FsAccess, Scopes, restrict_self};
use std::path::PathBuf;

/// Applies the ruleset exactly as planned: the ABI was probed, so anything
/// less than full enforcement is an error (fail closed).
pub(super) fn apply(abi: u32, paths: &[PathBuf], fifo: &[PathBuf], scoped: bool) -> Result<(), Fail> {
    // FIFOs only where nothing of the host's reads later (a FIFO named
    // `.gitignore` in the workspace makes host git wait).
    let mut beneath: Vec<(PathBuf, FsAccess)> =
        paths.iter().map(|p| (p.clone(), FsAccess::WriteNoFifo)).collect();
    beneath.extend(fifo.iter().map(|p| (p.clone(), FsAccess::MakeFifo)));
    // Files the caller handed over on fds 0-2 for writing (a terminal, a log
    // file) stay writable when re-opened through /dev/stdout or
    // /proc/self/fd: the process can write them through the fd anyway.
    beneath.extend(stdio(false));
    restrict_self(&Domain {
        abi,
        handle: Some(FsAccess::Write),
        scopes: if scoped { Scopes::All } else { Scopes::None },
        no_tcp: false,
        beneath,
        skip_missing: false,
    })?;
    Ok(())
}

/// The `LandlockAllowList` step's rules applied.
pub(super) fn allow_list(a: &crate::plan::AllowRules) -> Result<(), Fail> {
    let mut beneath: Vec<(PathBuf, FsAccess)> = Vec::new();
    beneath.extend(a.read.iter().map(|p| (p.clone(), FsAccess::Read)));
    beneath.extend(a.list.iter().map(|p| (p.clone(), FsAccess::ListDir)));
    beneath.extend(a.write.iter().map(|p| (p.clone(), FsAccess::ReadWriteNoFifo)));
    beneath.extend(a.fifo.iter().map(|p| (p.clone(), FsAccess::MakeFifo)));
    beneath.extend(a.write_files.iter().map(|p| (p.clone(), FsAccess::Device)));
    beneath.extend(stdio(true));
    restrict_self(&Domain {
        abi: a.abi,
        handle: Some(FsAccess::ReadWrite),
        scopes: if a.scoped { Scopes::All } else { Scopes::None },
        no_tcp: a.no_tcp,
        beneath,
        // The lists come from the host's directories at the start: an
        // entry gone since needs no grant.
        skip_missing: true,
    })?;
    Ok(())
}

/// `run --pid private`'s domain: only the scopes (signals, abstract
/// sockets). It handles no filesystem access, so mount(2) stays allowed to
/// the nested sandboxes the mode is for.
pub(super) fn scopes_only(abi: u32) -> Result<(), Fail> {
    restrict_self(&Domain {
        abi,
        handle: None,
        scopes: Scopes::All,
        no_tcp: false,
        beneath: Vec::new(),
        skip_missing: false,
    })?;
    Ok(())
}

/// The files on fds 0-2 as they may be re-opened by path: writable where
/// handed over for writing; with `terminals` (a domain that handles reads
/// too), the caller's terminal read and written, as the namespaces mode's
/// /dev/console is (the rest of /dev/pts is not readable there).
fn stdio(terminals: bool) -> Vec<(PathBuf, FsAccess)> {
    use rustix::fs::{FileType, OFlags};
    (0..3)
        .filter_map(|fd| {
            let flags = k::fcntl_getfl(std_fd(fd)).ok()?;
            let kind = FileType::from_raw_mode(k::fstat(std_fd(fd)).ok()?.st_mode);
            let writable = (flags.contains(OFlags::WRONLY) || flags.contains(OFlags::RDWR))
                && matches!(
                    kind,
                    FileType::RegularFile | FileType::CharacterDevice | FileType::Fifo
                );
            // A character device on fds 0-2 is the caller's (a terminal,
            // /dev/null): the fd reaches it anyway.
            let device = terminals && kind == FileType::CharacterDevice;
            let link = PathBuf::from(format!("/proc/self/fd/{fd}"));
            // Anonymous pipes and sockets ("pipe:[…]") are not on any path.
            if !(writable || device) || !k::read_link(&link).is_ok_and(|t| t.is_absolute()) {
                return None;
            }
            Some((
                link,
                if device {
                    FsAccess::Device
                } else {
                    FsAccess::FileWrite
                },
            ))
        })
        .collect()
}

/// fds 0-2.
fn std_fd(fd: i32) -> rustix::fd::BorrowedFd<'static> {
    match fd {
        0 => rustix::stdio::stdin(),
        1 => rustix::stdio::stdout(),
        _ => rustix::stdio::stderr(),
    }
}
