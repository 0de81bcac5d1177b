// The seccomp filter's rules and the small compiler that turns them into one
// classic-BPF program, shared by build.rs (which compiles them once, at build
// time) and the tests. Self-contained: build.rs includes this file with
// `#[path]`, so it may use only core and std.
//
// One program, installed with one seccomp(2) call, holds every rule: each
// syscall's rules return their own action (EPERM, ENOSYS, or a user
// notification for the warden), which a single-action compiler could not.

/// The terminal ioctls refused: they push input into a terminal (TIOCSTI) or
/// drive the console (TIOCLINUX). The same numbers on every Linux arch here.
pub const DENIED_IOCTLS: [(u32, &str); 2] = [(0x5412, "TIOCSTI"), (0x541C, "TIOCLINUX")];

/// The mode bits no file may get inside: a setuid or setgid file left in a
/// writable root would run with the caller's (or root's) identity on the
/// host, for anyone.
pub const SET_ID_BITS: [(u32, &str); 2] = [(0o4000, "S_ISUID"), (0o2000, "S_ISGID")];

/// `O_CREAT` and `O_TMPFILE`'s own bit: the flags under which open's mode
/// argument means something.
const O_CREAT: u32 = 0o100;
const O_TMPFILE_BIT: u32 = 0o20000000;

pub const RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const RET_ERRNO: u32 = 0x0005_0000;
pub const RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub const RET_ALLOW: u32 = 0x7fff_0000;
const EPERM: u32 = 1;
const ENOSYS: u32 = 38;

/// The architectures qwrap builds for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
    Riscv64,
}

impl Arch {
    pub fn from_target(name: &str) -> Option<Arch> {
        match name {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" => Some(Arch::Aarch64),
            "riscv64" => Some(Arch::Riscv64),
            _ => None,
        }
    }

    /// AUDIT_ARCH_* as seccomp_data.arch holds it.
    fn audit(self) -> u32 {
        match self {
            Arch::X86_64 => 0xc000_003e,
            Arch::Aarch64 => 0xc000_00b7,
            Arch::Riscv64 => 0xc000_00f3,
        }
    }

    /// A syscall's number (x86_64, then the generic table); -1 where the
    /// call does not exist.
    fn nr(self, x86: i64, generic: i64) -> i64 {
        if self == Arch::X86_64 { x86 } else { generic }
    }
}

/// A test on one argument's low 32 bits (every argument tested here is an
/// int, a mode or a flag word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    Eq(u8, u32),
    Ne(u8, u32),
    /// `(arg & mask) != 0`: one BPF_JSET.
    AnyBit(u8, u32),
}

/// One syscall's rules: the action when any rule (all its conditions) holds;
/// no rules at all means always.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub nr: i64,
    pub any_of: Vec<Vec<Cond>>,
    pub action: u32,
}

/// Which rules go in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warden {
    /// No warden (bwrap mode's layers): nothing is handed over.
    None,
    /// Calls aimed at another process go to the warden.
    Processes,
    /// …and the signal calls too (no Landlock signal scope).
    ProcessesAndSignals,
}

/// Every rule: refused with EPERM
/// - ioctl(_, TIOCSTI|TIOCLINUX);
/// - chmod, fchmod, fchmodat, fchmodat2 with S_ISUID or S_ISGID in the mode;
/// - open, openat, creat and mknod(at) that create a file with those bits;
///
/// openat2 fails with ENOSYS (its mode is in a struct the filter cannot
/// read; callers fall back to openat); and for the warden, a user
/// notification for calls aimed at a process other than the caller.
pub fn rules(arch: Arch, warden: Warden) -> Vec<Rules> {
    let n = |x86, g| arch.nr(x86, g);
    let eperm = RET_ERRNO | EPERM;
    let mut out = vec![Rules {
        nr: n(16, 29),
        any_of: DENIED_IOCTLS.iter().map(|&(c, _)| vec![Cond::Eq(1, c)]).collect(),
        action: eperm,
    }];
    // One test for both bits, and one for both creating flags.
    let set_id_bits = SET_ID_BITS.iter().fold(0, |m, (b, _)| m | b);
    let set_id = |mode_arg: u8, flags_arg: Option<u8>| -> Vec<Vec<Cond>> {
        let has = Cond::AnyBit(mode_arg, set_id_bits);
        match flags_arg {
            None => vec![vec![has]],
            Some(f) => vec![vec![Cond::AnyBit(f, O_CREAT | O_TMPFILE_BIT), has]],
        }
    };
    for (nr, mode_arg, flags_arg) in [
        (n(90, -1), 1, None),     // chmod
        (n(91, 52), 1, None),     // fchmod
        (n(268, 53), 2, None),    // fchmodat
        (n(452, 452), 2, None),   // fchmodat2
        (n(85, -1), 1, None),     // creat
        (n(133, -1), 1, None),    // mknod
        (n(259, 33), 2, None),    // mknodat
        (n(2, -1), 2, Some(1)),   // open
        (n(257, 56), 3, Some(2)), // openat
    ] {
        out.push(Rules {
            nr,
            any_of: set_id(mode_arg, flags_arg),
            action: eperm,
        });
    }
    out.push(Rules {
        nr: 437, // openat2, the same number everywhere
        any_of: vec![],
        action: RET_ERRNO | ENOSYS,
    });
    if warden == Warden::None {
        return out.into_iter().filter(|r| r.nr >= 0).collect();
    }
    let notify = |nr: i64, any_of: Vec<Vec<Cond>>| Rules {
        nr,
        any_of,
        action: RET_USER_NOTIF,
    };
    let not_caller = || vec![vec![Cond::Ne(0, 0)]];
    for nr in [
        n(302, 261), // prlimit64
        n(203, 122), // sched_setaffinity
        n(144, 119), // sched_setscheduler
        n(142, 118), // sched_setparam
        n(314, 274), // sched_setattr
        n(256, 238), // migrate_pages
        n(279, 239), // move_pages
    ] {
        out.push(notify(nr, not_caller()));
    }
    // setpriority(PRIO_PROCESS=0, 0) and ioprio_set(IOPRIO_WHO_PROCESS=1, 0)
    // are the caller itself.
    out.push(notify(
        n(141, 140),
        vec![vec![Cond::Ne(0, 0)], vec![Cond::Ne(1, 0)]],
    ));
    out.push(notify(
        n(251, 30),
        vec![vec![Cond::Ne(0, 1)], vec![Cond::Ne(1, 0)]],
    ));
    if warden == Warden::ProcessesAndSignals {
        for nr in [
            n(62, 129),  // kill
            n(200, 130), // tkill
            n(234, 131), // tgkill
            n(129, 138), // rt_sigqueueinfo
            n(297, 240), // rt_tgsigqueueinfo
            424,         // pidfd_send_signal
        ] {
            out.push(notify(nr, vec![]));
        }
        // fcntl(F_SETOWN = 8 | F_SETOWN_EX = 15): who gets SIGIO.
        out.push(notify(
            n(72, 25),
            vec![vec![Cond::Eq(1, 8)], vec![Cond::Eq(1, 15)]],
        ));
    }
    out.into_iter().filter(|r| r.nr >= 0).collect()
}

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;
/// seccomp_data: nr at 0, arch at 4, args at 16 + 8 * i (low word first on
/// the little-endian targets here).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
fn off_arg(i: u8) -> u32 {
    16 + 8 * u32::from(i)
}

/// One instruction: (code, jt, jf, k).
pub type Insn = (u16, u8, u8, u32);

/// Compiles the rules: the architecture check (another ABI kills the
/// process: the filter could not inspect it; x32 calls fail with ENOSYS),
/// then a search for the syscall's block, which returns its action when a
/// rule holds and ALLOW otherwise; ALLOW for every other syscall.
pub fn compile(arch: Arch, rules: &[Rules]) -> Vec<Insn> {
    let mut p: Vec<Insn> = vec![
        (LD_W_ABS, 0, 0, OFF_ARCH),
        (JEQ_K, 1, 0, arch.audit()),
        (RET_K, 0, 0, RET_KILL_PROCESS),
        (LD_W_ABS, 0, 0, OFF_NR),
    ];
    if arch == Arch::X86_64 {
        p.push((JSET_K, 0, 1, 0x4000_0000));
        p.push((RET_K, 0, 0, RET_ERRNO | ENOSYS));
    }
    let mut sorted: Vec<&Rules> = rules.iter().collect();
    sorted.sort_by_key(|r| r.nr);
    p.extend(dispatch(&sorted));
    p
}

/// A binary search over the syscall numbers, then a short chain: the kernel
/// runs the program once per syscall number when the filter is installed
/// (to find the calls it always allows), so a long linear chain would make
/// every sandbox's start-up pay for it.
fn dispatch(rules: &[&Rules]) -> Vec<Insn> {
    if rules.len() <= 3 {
        let mut p = Vec::new();
        for r in rules {
            let b = block(r);
            assert!(b.len() < 256, "a syscall's block fits an 8-bit jump");
            p.push((JEQ_K, 0, b.len() as u8, r.nr as u32));
            p.extend(b);
        }
        p.push((RET_K, 0, 0, RET_ALLOW));
        return p;
    }
    let mid = rules.len() / 2;
    let low = dispatch(&rules[..mid]);
    let high = dispatch(&rules[mid..]);
    assert!(low.len() < 256, "the program fits 8-bit jumps");
    let mut p = vec![(JGE_K, low.len() as u8, 0, rules[mid].nr as u32)];
    p.extend(low);
    p.extend(high);
    p
}

/// The block of one syscall: each rule's conditions, a failing one jumping
/// to the next rule; a rule that holds returns the action.
fn block(r: &Rules) -> Vec<Insn> {
    let mut b: Vec<Insn> = Vec::new();
    if r.any_of.is_empty() {
        b.push((RET_K, 0, 0, r.action));
        return b;
    }
    for rule in &r.any_of {
        let mut body: Vec<Insn> = Vec::new();
        // Each condition is 2 instructions; a failing test jumps past
        // the rest of this rule (its remaining tests and its return).
        for (i, c) in rule.iter().enumerate() {
            let rest = 2 * (rule.len() - i - 1) + 1;
            let skip = rest as u8;
            match *c {
                Cond::Eq(a, v) => {
                    body.push((LD_W_ABS, 0, 0, off_arg(a)));
                    body.push((JEQ_K, 0, skip, v));
                }
                Cond::Ne(a, v) => {
                    body.push((LD_W_ABS, 0, 0, off_arg(a)));
                    body.push((JEQ_K, skip, 0, v));
                }
                Cond::AnyBit(a, mask) => {
                    body.push((LD_W_ABS, 0, 0, off_arg(a)));
                    body.push((JSET_K, 0, skip, mask));
                }
            }
        }
        body.push((RET_K, 0, 0, r.action));
        b.extend(body);
    }
    b.push((RET_K, 0, 0, RET_ALLOW));
    b
}

/// Runs a program on one call, as the kernel would (for the tests).
pub fn run(prog: &[Insn], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    let word = |off: u32| -> u32 {
        match off {
            0 => nr,
            4 => arch,
            o if o >= 16 => {
                let i = ((o - 16) / 8) as usize;
                if (o - 16) % 8 == 0 {
                    args[i] as u32
                } else {
                    (args[i] >> 32) as u32
                }
            }
            _ => 0,
        }
    };
    let (mut pc, mut a) = (0usize, 0u32);
    loop {
        let (code, jt, jf, k) = prog[pc];
        pc += 1;
        match code {
            LD_W_ABS => a = word(k),
            JEQ_K => pc += if a == k { jt } else { jf } as usize,
            JSET_K => pc += if a & k != 0 { jt } else { jf } as usize,
            JGE_K => pc += if a >= k { jt } else { jf } as usize,
            RET_K => return k,
            _ => panic!("unknown instruction {code:#x}"),
        }
    }
}
