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

/// The mode bits no file may get inside: a setuid or setgid file left in a
/// writable root would run with the caller's (or root's) identity on the
/// host, for anyone.
pub const SET_ID_BITS: [(u64, &str); 2] = [(0o4000, "S_ISUID"), (0o2000, "S_ISGID")];

/// `O_CREAT` and `O_TMPFILE`'s own bit: the flags under which open's mode
/// argument means something.
const O_CREAT: u64 = 0o100;
const O_TMPFILE_BIT: u64 = 0o20000000;

/// x32 syscalls carry this bit; the x32 ioctl (514) is refused outright.
const X32_IOCTL: i64 = 0x4000_0000 + 514;

/// Syscall numbers by architecture (x86_64, then the generic table that
/// aarch64 and riscv64 share; -1 where the call does not exist).
struct Nr {
    ioctl: i64,
    chmod: i64,
    fchmod: i64,
    fchmodat: i64,
    fchmodat2: i64,
    open: i64,
    creat: i64,
    openat: i64,
    mknod: i64,
    mknodat: i64,
    openat2: i64,
}

fn nr(arch: TargetArch) -> Nr {
    match arch {
        TargetArch::x86_64 => Nr {
            ioctl: 16,
            chmod: 90,
            fchmod: 91,
            fchmodat: 268,
            fchmodat2: 452,
            open: 2,
            creat: 85,
            openat: 257,
            mknod: 133,
            mknodat: 259,
            openat2: 437,
        },
        _ => Nr {
            ioctl: 29,
            chmod: -1,
            fchmod: 52,
            fchmodat: 53,
            fchmodat2: 452,
            open: -1,
            creat: -1,
            openat: 56,
            mknod: -1,
            mknodat: 33,
            openat2: 437,
        },
    }
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
}

/// One rule per set-id bit: `arg mode` has that bit, and (for open-style
/// calls) `arg flags` creates a file.
fn set_id_rules(mode_arg: u8, flags_arg: Option<u8>) -> Result<Vec<SeccompRule>, BackendError> {
    let mut rules = Vec::new();
    for (bit, _) in SET_ID_BITS {
        let has_bit = cond(mode_arg, SeccompCmpOp::MaskedEq(bit), bit)?;
        match flags_arg {
            None => rules.push(SeccompRule::new(vec![has_bit])?),
            Some(f) => {
                for create in [O_CREAT, O_TMPFILE_BIT] {
                    let creates = cond(f, SeccompCmpOp::MaskedEq(create), create)?;
                    rules.push(SeccompRule::new(vec![creates, has_bit.clone()])?);
                }
            }
        }
    }
    Ok(rules)
}

/// Refused with EPERM, everything else allowed:
/// - ioctl(_, TIOCSTI|TIOCLINUX);
/// - chmod, fchmod, fchmodat, fchmodat2 with S_ISUID or S_ISGID in the mode;
/// - open, openat, creat and mknod(at) that create a file with those bits.
///
/// A syscall of another ABI (i386 via int 0x80) fails the architecture check
/// and kills the process: the filter could not inspect it.
pub fn filter(arch: TargetArch) -> Result<SeccompFilter, BackendError> {
    let n = nr(arch);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut ioctl = Vec::new();
    for (cmd, _) in DENIED_IOCTLS {
        ioctl.push(SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, cmd)?])?);
    }
    rules.insert(n.ioctl, ioctl);
    for (call, mode_arg, flags_arg) in [
        (n.chmod, 1, None),
        (n.fchmod, 1, None),
        (n.fchmodat, 2, None),
        (n.fchmodat2, 2, None),
        (n.creat, 1, None),
        (n.mknod, 1, None),
        (n.mknodat, 2, None),
        (n.open, 2, Some(1)),
        (n.openat, 3, Some(2)),
    ] {
        if call >= 0 {
            rules.insert(call, set_id_rules(mode_arg, flags_arg)?);
        }
    }
    if arch == TargetArch::x86_64 {
        rules.insert(X32_IOCTL, vec![]);
    }
    SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(1), arch)
}

/// openat2(2) passes its mode in a struct the filter cannot read: it fails
/// with ENOSYS, as on a kernel without it, and callers fall back to openat.
pub fn openat2_filter(arch: TargetArch) -> Result<SeccompFilter, BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(nr(arch).openat2, vec![]);
    SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(38), arch)
}

/// The notify filter's match action is compiled as `SECCOMP_RET_TRACE |
/// NOTIFY_MARK` (seccompiler has no user-notification action) and build.rs
/// rewrites exactly those returns to `SECCOMP_RET_USER_NOTIF`.
pub const NOTIFY_MARK: u32 = 0x0e1d;
pub const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;

/// Syscalls that act on another process by pid, and their numbers
/// (x86_64, then the generic table).
fn process_calls(arch: TargetArch) -> [(&'static str, i64); 16] {
    let x86 = arch == TargetArch::x86_64;
    let n = |a: i64, g: i64| if x86 { a } else { g };
    [
        ("prlimit64", n(302, 261)),
        ("sched_setaffinity", n(203, 122)),
        ("sched_setscheduler", n(144, 119)),
        ("sched_setparam", n(142, 118)),
        ("sched_setattr", n(314, 274)),
        ("migrate_pages", n(256, 238)),
        ("move_pages", n(279, 239)),
        ("setpriority", n(141, 140)),
        ("ioprio_set", n(251, 30)),
        ("kill", n(62, 129)),
        ("tkill", n(200, 130)),
        ("tgkill", n(234, 131)),
        ("rt_sigqueueinfo", n(129, 138)),
        ("rt_tgsigqueueinfo", n(297, 240)),
        ("pidfd_send_signal", 424),
        ("fcntl", n(72, 25)),
    ]
}

/// The calls the warden decides: each one aimed at a process other than
/// the caller (pid 0 is the caller and passes untrapped). With `signals`,
/// the signal calls too (kernels without Landlock's signal scope).
pub fn notify_filter(arch: TargetArch, signals: bool) -> Result<SeccompFilter, BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let ne = |arg: u8, v: u64| cond(arg, SeccompCmpOp::Ne, v);
    for (name, nr) in process_calls(arch) {
        let r = match name {
            "setpriority" => vec![
                SeccompRule::new(vec![ne(0, 0)?])?,
                SeccompRule::new(vec![ne(1, 0)?])?,
            ],
            // IOPRIO_WHO_PROCESS is 1.
            "ioprio_set" => vec![
                SeccompRule::new(vec![ne(0, 1)?])?,
                SeccompRule::new(vec![ne(1, 0)?])?,
            ],
            "kill" | "tkill" | "tgkill" | "rt_sigqueueinfo" | "rt_tgsigqueueinfo" | "pidfd_send_signal"
                if signals =>
            {
                vec![]
            }
            // F_SETOWN (8) and F_SETOWN_EX (15) choose who gets SIGIO.
            "fcntl" if signals => vec![
                SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, 8)?])?,
                SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, 15)?])?,
            ],
            "kill" | "tkill" | "tgkill" | "rt_sigqueueinfo" | "rt_tgsigqueueinfo" | "pidfd_send_signal"
            | "fcntl" => continue,
            _ => vec![SeccompRule::new(vec![ne(0, 0)?])?],
        };
        rules.insert(nr, r);
    }
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Trace(NOTIFY_MARK),
        arch,
    )
}
