// The seccomp filter's rules, shared by build.rs (which compiles them to BPF
// once, at build time) and the tests. Self-contained: build.rs includes this
// file with `#[path]`, so it may use only seccompiler and core.

use seccompiler::{
    BackendError, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// The terminal ioctls refused: they push input into a terminal (TIOCSTI) or
/// drive the console (TIOCLINUX). The same numbers on every Linux arch here.
pub const DENIED_IOCTLS: [(u64, &str); 2] = [(0x5412, "TIOCSTI"), (0x541C, "TIOCLINUX")];

/// x32 syscalls carry this bit; the x32 ioctl (514) is refused outright.
const X32_IOCTL: i64 = 0x4000_0000 + 514;

/// `ioctl`'s syscall number.
fn ioctl_nr(arch: TargetArch) -> i64 {
    match arch {
        TargetArch::x86_64 => 16,
        _ => 29, // aarch64 and riscv64 share the generic table
    }
}

/// ioctl(_, TIOCSTI|TIOCLINUX) → EPERM; everything else allowed. A syscall of
/// another ABI (i386 via int 0x80) fails the architecture check and kills
/// the process: the filter could not inspect it.
pub fn filter(arch: TargetArch) -> Result<SeccompFilter, BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut ioctl = Vec::new();
    for (cmd, _) in DENIED_IOCTLS {
        let c = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, cmd)?;
        ioctl.push(SeccompRule::new(vec![c])?);
    }
    rules.insert(ioctl_nr(arch), ioctl);
    if arch == TargetArch::x86_64 {
        rules.insert(X32_IOCTL, vec![]);
    }
    SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(1), arch)
}
