//! Applies the planned Landlock ruleset: write-type access only beneath the
//! given paths (and the terminals already open on fds 0-2), and, when
//! scoped, no signals or abstract-socket connections out of the sandbox.

use super::Fail;
use crate::sys::fake;
use crate::sys::kernel as k;
use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::io::Errno;
use std::path::PathBuf;

/// Applies the ruleset exactly as planned: the ABI was probed, so anything
/// less than full enforcement is an error (fail closed).
pub(super) fn apply(abi: u32, paths: &[PathBuf], scoped: bool) -> Result<(), Fail> {
    let abi = ABI::from(abi as i32);
    let write = AccessFs::from_write(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(write)
        .map_err(|e| fail("handle_access", &e))?;
    if scoped {
        ruleset = ruleset
            .scope(Scope::from_all(abi))
            .map_err(|e| fail("scope", &e))?;
    }
    // Where the terminals handed over on fds 0-2 are (see below).
    let stdio = writable_stdio();
    if fake::takes("landlock_create_ruleset") {
        // The recording fake stands in for the landlock crate's calls.
        for _ in paths.iter().chain(&stdio) {
            fake::takes("openat");
            fake::takes("landlock_add_rule");
        }
        fake::takes("prctl");
        fake::takes("landlock_restrict_self");
        return Ok(());
    }
    let mut created = ruleset
        .create()
        .map_err(|e| fail("landlock_create_ruleset", &e))?;
    for p in paths {
        let fd = PathFd::new(p).map_err(|e| fail(&format!("open {}", p.display()), &e))?;
        created = created
            .add_rule(PathBeneath::new(fd, write))
            .map_err(|e| fail(&format!("landlock_add_rule {}", p.display()), &e))?;
    }
    // Files the caller handed over on fds 0-2 for writing (a terminal, a log
    // file) stay writable when re-opened through /dev/stdout or
    // /proc/self/fd: the process can write them through the fd anyway.
    let file_write = AccessFs::from_file(abi) & write;
    for link in &stdio {
        let pfd = PathFd::new(link).map_err(|e| fail(&format!("open {}", link.display()), &e))?;
        created = created
            .add_rule(PathBeneath::new(pfd, file_write))
            .map_err(|e| fail(&format!("landlock_add_rule {}", link.display()), &e))?;
    }
    enforced(created.restrict_self(), "ruleset")
}

/// The reaper's domain: it handles only reparenting (REFER), granted
/// beneath `/` (a domain otherwise denies every cross-directory rename and
/// link), and scopes signals. The sandbox's ruleset nests inside it, so
/// the reaper's kill(-1) reaches exactly the sandbox's processes and the
/// sandbox cannot signal or trace the reaper.
pub(super) fn signal_domain() -> Result<(), Fail> {
    if fake::takes("landlock_create_ruleset") {
        fake::takes("openat");
        fake::takes("landlock_add_rule");
        fake::takes("prctl");
        fake::takes("landlock_restrict_self");
        return Ok(());
    }
    // no_new_privs: set by the NoNewPrivs step before, and by the crate.
    let refer = AccessFs::Refer;
    let root = PathFd::new("/").map_err(|e| fail("open /", &e))?;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(refer)
        .map_err(|e| fail("handle_access", &e))?
        .scope(Scope::Signal)
        .map_err(|e| fail("scope", &e))?
        .create()
        .map_err(|e| fail("landlock_create_ruleset", &e))?
        .add_rule(PathBeneath::new(root, refer))
        .map_err(|e| fail("landlock_add_rule /", &e))?
        .restrict_self();
    enforced(status, "signal domain")
}

/// `run --pid private`'s domain: only the scopes (signals, abstract
/// sockets). It handles no filesystem access, so mount(2) stays allowed to
/// the nested sandboxes the mode is for.
pub(super) fn scopes_only(abi: u32) -> Result<(), Fail> {
    if fake::takes("landlock_create_ruleset") {
        fake::takes("prctl");
        fake::takes("landlock_restrict_self");
        return Ok(());
    }
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::from_all(ABI::from(abi as i32)))
        .map_err(|e| fail("scope", &e))?
        .create()
        .map_err(|e| fail("landlock_create_ruleset", &e))?
        .restrict_self();
    enforced(status, "scopes")
}

/// The ruleset restricts this process as asked, or the step fails: the ABI
/// was probed, so less than full enforcement is an error (fail closed).
fn enforced(
    status: Result<landlock::RestrictionStatus, landlock::RulesetError>,
    what: &str,
) -> Result<(), Fail> {
    let status = status.map_err(|e| fail("landlock_restrict_self", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(Fail::with(
            Errno::NOTSUP,
            format!("{what} only {:?}", status.ruleset),
        ));
    }
    Ok(())
}

/// A failure of the landlock crate, with the errno the kernel gave where
/// there was one (EINVAL where the crate refused before any call: an
/// access the ABI lacks, a rule without access).
fn fail(what: &str, e: &(dyn std::error::Error + 'static)) -> Fail {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut errno = Errno::INVAL;
    while let Some(c) = cause {
        if let Some(raw) = c
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            errno = Errno::from_raw_os_error(raw);
            break;
        }
        cause = c.source();
    }
    Fail::with(errno, format!("{what}: {e}"))
}

/// The fds 0-2 that are files the caller handed over for writing (a
/// terminal, a log file), by their /proc/self/fd links.
fn writable_stdio() -> Vec<PathBuf> {
    (0..3)
        .filter_map(|fd| {
            let link = PathBuf::from(format!("/proc/self/fd/{fd}"));
            // Anonymous pipes and sockets ("pipe:[…]") are not on any path.
            (handed_over_for_writing(std_fd(fd)) && k::read_link(&link).is_ok_and(|t| t.is_absolute()))
                .then_some(link)
        })
        .collect()
}

/// An open regular file, terminal or FIFO the fd may write.
fn handed_over_for_writing(fd: rustix::fd::BorrowedFd<'_>) -> bool {
    use rustix::fs::{FileType, OFlags};
    let Ok(flags) = k::fcntl_getfl(fd) else {
        return false;
    };
    let writable = flags.contains(OFlags::WRONLY) || flags.contains(OFlags::RDWR);
    let kind = k::fstat(fd).map(|st| FileType::from_raw_mode(st.st_mode));
    writable
        && matches!(
            kind,
            Ok(FileType::RegularFile) | Ok(FileType::CharacterDevice) | Ok(FileType::Fifo)
        )
}

/// fds 0-2.
fn std_fd(fd: i32) -> rustix::fd::BorrowedFd<'static> {
    match fd {
        0 => rustix::stdio::stdin(),
        1 => rustix::stdio::stdout(),
        _ => rustix::stdio::stderr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_landlock_failure_keeps_the_kernels_errno() {
        let e = PathFd::new("/nonexistent/qwrap").unwrap_err();
        let f = fail("open /nonexistent/qwrap", &e);
        assert_eq!(f.errno, Errno::NOENT, "{:?}", f.detail);
        assert!(
            f.detail
                .as_deref()
                .unwrap_or_default()
                .starts_with("open /nonexistent/qwrap: ")
        );
    }
}
