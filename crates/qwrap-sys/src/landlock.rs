//! Landlock through the seam: a domain described as plain data and applied
//! with the landlock crate, every call recorded by the fake while a test
//! records, every failure a [`SysError`] with the kernel's errno.

use super::error::SysError;
use super::fake;
use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::io::Errno;
use std::path::PathBuf;

/// Filesystem access, as far as qwrap's domains use it. A rule on a file
/// (not a directory) keeps only the rights that apply to files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsAccess {
    /// Every write-type access of the ABI.
    Write,
    /// The write-type access that applies to files (a handed-over file).
    FileWrite,
    /// Reading and writing a device file, its ioctls too (the devices
    /// every program opens, the caller's terminal), never executing it.
    Device,
    /// Only reparenting (rename and link across directories).
    Refer,
    /// Reading files and listing directories.
    Read,
    /// Listing directories only (their files unreadable).
    ListDir,
    /// Read and Write.
    ReadWrite,
    /// Read and every write-type access but making a FIFO.
    ReadWriteNoFifo,
    /// Every write-type access but making a FIFO (a directory host tools
    /// read later: a FIFO there makes them wait).
    WriteNoFifo,
    /// Making FIFOs only.
    MakeFifo,
}

/// What a domain scopes: processes outside it are out of reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scopes {
    None,
    Signals,
    /// Every scope of the ABI (signals, abstract sockets).
    All,
}

/// One Landlock domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    pub abi: u32,
    /// The filesystem access the domain handles (denied unless a rule
    /// grants it), if any.
    pub handle: Option<FsAccess>,
    pub scopes: Scopes,
    /// TCP bind and connect handled with no rule granting them: no TCP at
    /// all (ABI 4 and later).
    pub no_tcp: bool,
    /// Access granted beneath each path.
    pub beneath: Vec<(PathBuf, FsAccess)>,
    /// A path gone since it was listed gets no rule instead of failing the
    /// domain (a grant the path no longer needs; nothing is widened).
    pub skip_missing: bool,
}

/// Restricts this process to the domain, entirely or not at all: anything
/// less than full enforcement is an error (the ABI was probed).
/// Calls: landlock_create_ruleset; per rule open(O_PATH) and
/// landlock_add_rule; prctl(PR_SET_NO_NEW_PRIVS); landlock_restrict_self.
pub fn restrict_self(d: &Domain) -> Result<(), SysError> {
    if let Some(first) = fake::answer("landlock_create_ruleset") {
        return recorded(first, d);
    }
    let abi = ABI::from(d.abi as i32);
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    if let Some(h) = d.handle {
        ruleset = ruleset
            .handle_access(access(h, abi))
            .map_err(|e| crate_error("landlock_create_ruleset", "handled access", &e))?;
    }
    if d.no_tcp {
        ruleset = ruleset
            .handle_access(landlock::AccessNet::BindTcp | landlock::AccessNet::ConnectTcp)
            .map_err(|e| crate_error("landlock_create_ruleset", "handled TCP access", &e))?;
    }
    let scopes: BitFlags<Scope> = match d.scopes {
        Scopes::None => BitFlags::empty(),
        Scopes::Signals => Scope::Signal.into(),
        Scopes::All => Scope::from_all(abi),
    };
    if !scopes.is_empty() {
        ruleset = ruleset
            .scope(scopes)
            .map_err(|e| crate_error("landlock_create_ruleset", "scoped", &e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| crate_error("landlock_create_ruleset", "", &e))?;
    for (path, a) in &d.beneath {
        let shown = format!("{path:?}");
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            Err(e) => {
                let e = crate_error("open", format!("{shown}, O_PATH"), &e);
                if d.skip_missing && e.errno == Errno::NOENT {
                    continue;
                }
                return Err(e);
            }
        };
        let mut granted = access(*a, abi);
        let dir = rustix::fs::fstat(&fd).is_ok_and(|st| {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
        });
        if !dir {
            granted &= AccessFs::from_file(abi);
        }
        created = created
            .add_rule(PathBeneath::new(fd, granted))
            .map_err(|e| crate_error("landlock_add_rule", shown, &e))?;
    }
    // no_new_privs: set by the crate (and by the executor's step before).
    let status = created
        .restrict_self()
        .map_err(|e| crate_error("landlock_restrict_self", "", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(SysError::new(
            "landlock_restrict_self",
            format!("only {:?}", status.ruleset),
            Errno::NOTSUP,
        ));
    }
    Ok(())
}

/// The fake's record of the same calls, with the arguments the real ones
/// report on failure, each of which a test may fail.
fn recorded(first: Result<(), Errno>, d: &Domain) -> Result<(), SysError> {
    let call = |name: &'static str, args: String| match fake::answer_about(name, || args.clone()) {
        Some(Err(errno)) => Err(SysError::new(name, args, errno)),
        _ => Ok(()),
    };
    first.map_err(|errno| SysError::new("landlock_create_ruleset", "", errno))?;
    for (path, _) in &d.beneath {
        let shown = format!("{path:?}");
        call("openat", format!("{shown}, O_PATH"))?;
        call("landlock_add_rule", shown)?;
    }
    call("prctl", "PR_SET_NO_NEW_PRIVS, 1".into())?;
    call("landlock_restrict_self", String::new())
}

fn access(a: FsAccess, abi: ABI) -> BitFlags<AccessFs> {
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    match a {
        FsAccess::Write => AccessFs::from_write(abi),
        FsAccess::FileWrite => AccessFs::from_file(abi) & AccessFs::from_write(abi),
        FsAccess::Device => AccessFs::from_file(abi) & !AccessFs::Execute,
        FsAccess::Refer => AccessFs::Refer.into(),
        FsAccess::Read => read,
        FsAccess::ListDir => AccessFs::ReadDir.into(),
        FsAccess::ReadWrite => read | AccessFs::from_write(abi),
        FsAccess::ReadWriteNoFifo => (read | AccessFs::from_write(abi)) & !AccessFs::MakeFifo,
        FsAccess::WriteNoFifo => AccessFs::from_write(abi) & !AccessFs::MakeFifo,
        FsAccess::MakeFifo => AccessFs::MakeFifo.into(),
    }
}

/// A failure of the landlock crate, with the errno the kernel gave where
/// there was one; EINVAL where the crate refused before any call (an
/// access the ABI lacks, a rule without access), its words in the args.
fn crate_error(
    call: &'static str,
    args: impl Into<String>,
    e: &(dyn std::error::Error + 'static),
) -> SysError {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut errno = None;
    while let Some(c) = cause {
        if let Some(raw) = c
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            errno = Some(Errno::from_raw_os_error(raw));
            break;
        }
        cause = c.source();
    }
    let args = args.into();
    match errno {
        Some(errno) => SysError::new(call, args, errno),
        None => SysError::new(
            call,
            format!("{args}: refused before the call: {e}"),
            Errno::INVAL,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_the_kernels_errno_and_names_the_call() {
        let e = PathFd::new("/nonexistent/qwrap").unwrap_err();
        let f = crate_error("open", "\"/nonexistent/qwrap\", O_PATH", &e);
        assert_eq!(f.errno, Errno::NOENT);
        assert_eq!(f.to_string(), "open(\"/nonexistent/qwrap\", O_PATH)");
    }

    #[test]
    fn a_rule_on_a_missing_path_fails_closed_with_enoent() {
        let d = Domain {
            abi: 1,
            handle: Some(FsAccess::Write),
            scopes: Scopes::None,
            no_tcp: false,
            beneath: vec![("/nonexistent/qwrap".into(), FsAccess::Write)],
            skip_missing: false,
        };
        // The open fails before anything restricts this test process.
        let e = restrict_self(&d).unwrap_err();
        if e.call == "landlock_create_ruleset" {
            assert_eq!(crate::landlock_abi(), 0, "{e}: {:?}", e.errno);
            return;
        }
        assert_eq!((e.call, e.errno), ("open", Errno::NOENT), "{e}");
        assert_eq!(e.args, "\"/nonexistent/qwrap\", O_PATH");
    }
}
