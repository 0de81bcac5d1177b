//! The seccomp filter: `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` fail with
//! EPERM, so a confined process cannot type into the user's terminal.
//! Everything else is allowed. Syscalls of another architecture (i386 via
//! int 0x80) kill the process: the filter could not inspect them.

use rustix::io::Errno;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};
use std::collections::BTreeMap;

/// x32 syscalls carry this bit; the x32 ioctl (514) is refused outright.
const X32_SYSCALL_BIT: i64 = 0x4000_0000;
const X32_IOCTL: i64 = X32_SYSCALL_BIT + 514;

/// The terminal ioctls refused.
pub const DENIED_IOCTLS: [(u64, &str); 2] = [(libc::TIOCSTI, "TIOCSTI"), (libc::TIOCLINUX, "TIOCLINUX")];

fn program() -> Result<BpfProgram, String> {
    let arch: TargetArch = std::env::consts::ARCH.try_into().map_err(|e| format!("{e:?}"))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let ioctl_rules = DENIED_IOCTLS
        .iter()
        .map(|(cmd, _)| {
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *cmd)
                .and_then(|c| SeccompRule::new(vec![c]))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    if arch == TargetArch::x86_64 {
        rules.insert(X32_IOCTL, vec![]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}

/// Installs the filter (no_new_privs is already set).
pub(super) fn apply() -> Result<(), (Errno, String)> {
    let prog = program().map_err(|e| (Errno::INVAL, format!("compiling the filter: {e}")))?;
    seccompiler::apply_filter(&prog).map_err(|e| {
        let errno = match &e {
            seccompiler::Error::Seccomp(io) => io.raw_os_error().map(Errno::from_raw_os_error),
            _ => None,
        };
        (errno.unwrap_or(Errno::INVAL), e.to_string())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn filter_compiles() {
        assert!(super::program().unwrap().len() > 4);
    }
}
