// The seccomp filter's rules and the small compiler that turns them into one
// classic-BPF program, shared by build.rs (which compiles them once, at build
// time) and the tests. Self-contained: build.rs includes this file with
// `#[path]`, so it may use only core and std.
//
// The rules come from one table over the whole x86_64 syscall table
// (syscalls.tsv): each call that can act on another process, set mode bits,
// ownership or capabilities, change mounts or namespaces, or reach a socket
// names the rule that holds it. The filter and the warden both read that
// table, so that neither can miss a call the other knows; and every number
// past the table's last fails with ENOSYS, so that a call added by a later
// kernel cannot be a parallel route nobody has looked at.
//
// One program, installed with one seccomp(2) call, holds every rule: each
// case returns its own action (EPERM, ENOSYS, or a user notification for
// the warden), which a single-action compiler could not.

/// The table: `nr (x86_64)`, `nr (generic)`, `name`, `class`, `rule`, and
/// for rule `kernel` how the kernel holds the call.
pub const SYSCALLS: &str = include_str!("syscalls.tsv");

/// The first number past the table: this and every later one is refused
/// with ENOSYS.
pub const FIRST_UNKNOWN: u32 = 470;

/// The terminal ioctls refused: they push input into a terminal (TIOCSTI) or
/// drive the console (TIOCLINUX). The same numbers on every Linux arch here.
pub const DENIED_IOCTLS: [(u32, &str); 2] = [(0x5412, "TIOCSTI"), (0x541C, "TIOCLINUX")];

/// The ioctls that choose who gets a file's SIGIO (FIOSETOWN, SIOCSPGRP:
/// the owner is read from the caller's memory) or turn SIGIO on (FIOASYNC:
/// on a terminal the owner becomes its foreground process group, which can
/// hold host processes). Refused where Landlock cannot scope signals.
pub const OWNER_IOCTLS: [(u32, &str); 3] =
    [(0x8901, "FIOSETOWN"), (0x8902, "SIOCSPGRP"), (0x5452, "FIOASYNC")];

/// The mode bits no file may get inside: a setuid or setgid file left in a
/// writable root would run with the caller's (or root's) identity on the
/// host, for anyone.
pub const SET_ID_BITS: [(u32, &str); 2] = [(0o4000, "S_ISUID"), (0o2000, "S_ISGID")];

/// `O_CREAT` and `O_TMPFILE`'s own bit: the flags under which open's mode
/// argument means something.
const O_CREAT: u32 = 0o100;
const O_TMPFILE_BIT: u32 = 0o20000000;
const O_ASYNC: u32 = 0o20000;
const CLONE_NEWUSER: u32 = 0x1000_0000;
const CLONE_NEWCGROUP: u32 = 0x0200_0000;
const F_SETFL: u32 = 4;
const F_SETOWN: u32 = 8;
const F_SETOWN_EX: u32 = 15;

pub const RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const RET_ERRNO: u32 = 0x0005_0000;
pub const RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub const RET_ALLOW: u32 = 0x7fff_0000;
pub const EPERM: u32 = RET_ERRNO | 1;
pub const ENOSYS: u32 = RET_ERRNO | 38;

/// The architectures qwrap builds for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
    Riscv64,
}

impl Arch {
    /// The architecture this build runs on.
    #[cfg(target_arch = "x86_64")]
    pub const HERE: Arch = Arch::X86_64;
    #[cfg(target_arch = "aarch64")]
    pub const HERE: Arch = Arch::Aarch64;
    #[cfg(target_arch = "riscv64")]
    pub const HERE: Arch = Arch::Riscv64;

    pub fn from_target(name: &str) -> Option<Arch> {
        match name {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" => Some(Arch::Aarch64),
            "riscv64" => Some(Arch::Riscv64),
            _ => None,
        }
    }

    /// AUDIT_ARCH_* as seccomp_data.arch holds it.
    pub fn audit(self) -> u32 {
        match self {
            Arch::X86_64 => 0xc000_003e,
            Arch::Aarch64 => 0xc000_00b7,
            Arch::Riscv64 => 0xc000_00f3,
        }
    }
}

/// The rule that holds a call, as the table names it: the filter and the
/// warden match on these, never on the table's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// `-`: nothing to hold.
    Unneeded,
    /// `kernel`: the kernel holds it (the column `held` says how).
    Kernel,
    Ioctl,
    SetidMode,
    SetidCreate,
    Times,
    Enosys,
    Xattr,
    Target,
    Setpriority,
    Ioprio,
    Signal,
    PidfdSignal,
    Clone,
    Clone3,
    Fcntl,
    Unshare,
}

impl Rule {
    /// Every rule with its name in the table.
    pub const ALL: [(Rule, &'static str); 17] = [
        (Rule::Unneeded, "-"),
        (Rule::Kernel, "kernel"),
        (Rule::Ioctl, "ioctl"),
        (Rule::SetidMode, "setid-mode"),
        (Rule::SetidCreate, "setid-create"),
        (Rule::Times, "times"),
        (Rule::Enosys, "enosys"),
        (Rule::Xattr, "xattr"),
        (Rule::Target, "target"),
        (Rule::Setpriority, "setpriority"),
        (Rule::Ioprio, "ioprio"),
        (Rule::Signal, "signal"),
        (Rule::PidfdSignal, "pidfd-signal"),
        (Rule::Clone, "clone"),
        (Rule::Clone3, "clone3"),
        (Rule::Fcntl, "fcntl"),
        (Rule::Unshare, "unshare"),
    ];

    /// The rule a name in the table stands for. A name no rule has stops
    /// the build (build.rs reads the table): no call is held by nothing.
    pub fn named(name: &str) -> Rule {
        match Rule::ALL.iter().find(|(_, n)| *n == name) {
            Some((r, _)) => *r,
            None => panic!("syscalls.tsv: no rule is named {name:?}"),
        }
    }

    /// Its name in the table.
    pub fn name(self) -> &'static str {
        match Rule::ALL.iter().find(|(r, _)| *r == self) {
            Some((_, n)) => n,
            None => "-",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syscall {
    pub nr: i64,
    pub generic: i64,
    pub name: &'static str,
    /// `process`, `attributes`, `mounts`, `network`, `io_uring`, or `-`.
    pub class: &'static str,
    /// The rule that holds it.
    pub rule: Rule,
    pub held: &'static str,
}

impl Syscall {
    /// Its number on an architecture (-1 where it does not exist).
    pub fn nr_on(&self, arch: Arch) -> i64 {
        if arch == Arch::X86_64 {
            self.nr
        } else {
            self.generic
        }
    }
}

/// The table's rows, in order of the x86_64 number.
pub fn table() -> Vec<Syscall> {
    SYSCALLS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let mut c = l.split('\t');
            let mut next = || c.next().unwrap_or("-");
            let num = |s: &str| s.parse().unwrap_or(-1);
            Syscall {
                nr: num(next()),
                generic: num(next()),
                name: next(),
                class: next(),
                rule: Rule::named(next()),
                held: next(),
            }
        })
        .collect()
}

/// The name of the call with this number on `arch` (`-` when none).
pub fn name_of(arch: Arch, nr: i64) -> &'static str {
    table()
        .into_iter()
        .find(|s| s.nr_on(arch) == nr)
        .map_or("-", |s| s.name)
}

/// The rule of the call with this number on `arch` (none needed when
/// there is no such call).
pub fn rule_of(arch: Arch, nr: i64) -> Rule {
    table()
        .into_iter()
        .find(|s| s.nr_on(arch) == nr)
        .map_or(Rule::Unneeded, |s| s.rule)
}

/// A test on one argument's low 32 bits (every argument tested here is an
/// int, a mode or a flag word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    Eq(u8, u32),
    Ne(u8, u32),
    /// `(arg & mask) != 0`: one BPF_JSET.
    AnyBit(u8, u32),
    /// `(arg & mask) == 0`.
    NoBit(u8, u32),
}

/// One syscall's cases, tried in order: the first whose conditions all hold
/// gives the action (no conditions: always); none holds: allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub nr: i64,
    pub name: &'static str,
    pub cases: Vec<(Vec<Cond>, u32)>,
}

/// Which filter: who installs it and what the kernel gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// `run`: a warden answers notifications (bwrap mode has none).
    pub warden: bool,
    /// No Landlock signal scope (Linux < 6.12, or --landlock off): signals,
    /// and SIGIO owners are held here instead.
    pub unscoped: bool,
    /// The caller is root: extended attributes are refused, since a file
    /// capability written in a nested user namespace would hold on the host.
    pub root: bool,
    /// `--isolation landlock`: mode bits and times (no Landlock right for
    /// them) go to the warden, which changes them only where the command
    /// may write.
    pub landlock_only: bool,
    /// `--explain`: every call that can be refused goes to the warden,
    /// which answers it as the filters without `--explain` would (their
    /// errno, its own judgment, or CONTINUE) and notes each refusal.
    pub explain: bool,
}

impl Profile {
    /// bwrap mode's layers: no warden.
    pub const PLAIN: Profile = Profile {
        warden: false,
        unscoped: false,
        root: false,
        landlock_only: false,
        explain: false,
    };

    /// Every profile build.rs compiles, with its constant's name: bwrap
    /// mode's (also a private PID namespace's, scoped and not root), then
    /// `run`'s with the warden (`NOTIFY…`) and the other private PID
    /// namespace ones (`PIDNS…`).
    pub fn all() -> Vec<(String, Profile)> {
        let mut v = vec![("PROGRAM".to_string(), Profile::PLAIN)];
        for warden in [true, false] {
            for unscoped in [false, true] {
                for root in [false, true] {
                    if !warden && !unscoped && !root {
                        continue; // PROGRAM
                    }
                    v.push((
                        format!(
                            "{}{}{}_PROGRAM",
                            if warden { "NOTIFY" } else { "PIDNS" },
                            if unscoped { "_UNSCOPED" } else { "" },
                            if root { "_ROOT" } else { "" }
                        ),
                        Profile {
                            warden,
                            unscoped,
                            root,
                            landlock_only: false,
                            explain: false,
                        },
                    ));
                }
            }
        }
        for unscoped in [false, true] {
            for root in [false, true] {
                v.push((
                    format!(
                        "NOTIFY_LANDLOCK{}{}_PROGRAM",
                        if unscoped { "_UNSCOPED" } else { "" },
                        if root { "_ROOT" } else { "" }
                    ),
                    Profile {
                        warden: true,
                        unscoped,
                        root,
                        landlock_only: true,
                        explain: false,
                    },
                ));
            }
        }
        // `--explain`'s: each warden profile with every call that can be
        // refused handed to the warden (`EXPLAIN_…`).
        let explained: Vec<(String, Profile)> = v
            .iter()
            .filter(|(_, p)| p.warden)
            .map(|(name, p)| (format!("EXPLAIN_{name}"), Profile { explain: true, ..*p }))
            .collect();
        v.extend(explained);
        // bwrap mode's layers with `QWRAP_EXPLAIN`: the monitor hears them.
        v.push((
            "EXPLAIN_BWRAP_PROGRAM".to_string(),
            Profile {
                explain: true,
                ..Profile::PLAIN
            },
        ));
        v
    }

    /// The same profile without `--explain`: what the warden answers by.
    pub fn base(self) -> Profile {
        Profile {
            explain: false,
            ..self
        }
    }
}

/// Whether an action refuses with an errno.
pub fn is_errno(action: u32) -> bool {
    action & 0xffff_0000 == RET_ERRNO
}

/// Where a mode-setting call keeps its mode, and its flags when it only
/// creates under O_CREAT.
fn mode_args(name: &str) -> (u8, Option<u8>) {
    match name {
        "chmod" | "fchmod" | "creat" | "mknod" => (1, None),
        "fchmodat" | "fchmodat2" | "mknodat" => (2, None),
        "open" => (2, Some(1)),
        _ => (3, Some(2)), // openat
    }
}

/// One case of a call's rule: its conditions (all hold) and the action.
pub type Case = (Vec<Cond>, u32);

/// The cases of one rule for one call in a profile without `--explain`
/// (filter_profile.rs folds its over these), and what they say: the
/// rule's own, then, without namespaces, the warden's for the calls that
/// change a file's mode bits or times.
pub fn base_cases(rule: Rule, name: &str, p: Profile) -> Vec<Case> {
    let mut v = rule_cases(rule, name, p);
    if p.warden && p.landlock_only && matches!(rule, Rule::SetidMode | Rule::Times) {
        v.push((vec![], RET_USER_NOTIF));
    }
    v
}

fn rule_cases(rule: Rule, name: &str, p: Profile) -> Vec<(Vec<Cond>, u32)> {
    let set_id = SET_ID_BITS.iter().fold(0, |m, (b, _)| m | b);
    let held_by_warden = p.warden && p.unscoped;
    match rule {
        Rule::Ioctl => {
            let mut v: Vec<(Vec<Cond>, u32)> = DENIED_IOCTLS
                .iter()
                .map(|&(c, _)| (vec![Cond::Eq(1, c)], EPERM))
                .collect();
            // A terminal's SIGIO owner is its foreground process group,
            // which can hold host processes in any PID namespace.
            if p.unscoped {
                v.extend(OWNER_IOCTLS.iter().map(|&(c, _)| (vec![Cond::Eq(1, c)], EPERM)));
            }
            v
        }
        Rule::SetidMode | Rule::SetidCreate => {
            let (mode, flags) = mode_args(name);
            let has = Cond::AnyBit(mode, set_id);
            match flags {
                None => vec![(vec![has], EPERM)],
                Some(f) => vec![(vec![Cond::AnyBit(f, O_CREAT | O_TMPFILE_BIT), has], EPERM)],
            }
        }
        Rule::Enosys => vec![(vec![], ENOSYS)],
        Rule::Xattr if p.root => vec![(vec![], EPERM)],
        Rule::Target if p.warden => vec![(vec![Cond::Ne(0, 0)], RET_USER_NOTIF)],
        // PRIO_PROCESS = 0 and IOPRIO_WHO_PROCESS = 1 with who 0: the caller.
        Rule::Setpriority if p.warden => vec![
            (vec![Cond::Ne(0, 0)], RET_USER_NOTIF),
            (vec![Cond::Ne(1, 0)], RET_USER_NOTIF),
        ],
        Rule::Ioprio if p.warden => vec![
            (vec![Cond::Ne(0, 1)], RET_USER_NOTIF),
            (vec![Cond::Ne(1, 0)], RET_USER_NOTIF),
        ],
        // Forks are never trapped: a held fork returns EINTR when a signal
        // arrives (seccomp's wait is interruptible), and shells fail.
        Rule::Signal if held_by_warden => vec![(vec![], RET_USER_NOTIF)],
        Rule::PidfdSignal if held_by_warden => vec![(vec![], ENOSYS)],
        // A user namespace made in the shared PID mode cannot be given its
        // id maps (/proc is the host's): the warden says what would work.
        // A cgroup namespace made inside is rooted at the caller's cgroup,
        // whose host groups a cgroup filesystem mounted in it would reach
        // (freeze, kill) wherever Landlock's file rules are off.
        Rule::Clone | Rule::Unshare => {
            let mut v = vec![(vec![Cond::AnyBit(0, CLONE_NEWCGROUP)], EPERM)];
            if p.warden {
                v.push((vec![Cond::AnyBit(0, CLONE_NEWUSER)], RET_USER_NOTIF));
            }
            v
        }
        // Its flags lie in memory the filter cannot read: callers fall
        // back to clone, whose flags it can.
        Rule::Clone3 => vec![(vec![], ENOSYS)],
        Rule::Fcntl if held_by_warden => vec![
            (vec![Cond::Eq(1, F_SETOWN)], RET_USER_NOTIF),
            (vec![Cond::Eq(1, F_SETOWN_EX)], EPERM),
            (vec![Cond::Eq(1, F_SETFL), Cond::AnyBit(2, O_ASYNC)], EPERM),
        ],
        // A private PID namespace: an owner given by pid is one of the
        // sandbox's; O_ASYNC on a terminal would make its foreground group
        // the owner.
        Rule::Fcntl if p.unscoped => vec![
            (vec![Cond::Eq(1, F_SETOWN_EX)], EPERM),
            (vec![Cond::Eq(1, F_SETFL), Cond::AnyBit(2, O_ASYNC)], EPERM),
        ],
        _ => Vec::new(),
    }
}

/// Every rule of a profile, each call's cases from `cases`
/// (filter_profile.rs's, which knows `--explain`).
pub fn table_rules(arch: Arch, p: Profile, cases: fn(Rule, &str, Profile) -> Vec<Case>) -> Vec<Rules> {
    table()
        .into_iter()
        .filter(|s| s.nr_on(arch) >= 0)
        .filter_map(|s| {
            let cases = cases(s.rule, s.name, p);
            (!cases.is_empty()).then_some(Rules {
                nr: s.nr_on(arch),
                name: s.name,
                cases,
            })
        })
        .collect()
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

/// Runs a program on one call, as the kernel would: the tests, and the
/// warden answering `--explain`'s notifications by the filters without it.
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

/// Compiles the rules: the architecture check (another ABI kills the
/// process: the filter could not inspect it; x32 calls fail with ENOSYS),
/// numbers past the table fail with ENOSYS, then a search for the
/// syscall's block, which returns its action when a case holds and ALLOW
/// otherwise; ALLOW for every other syscall.
pub fn compile(arch: Arch, rules: &[Rules]) -> Vec<Insn> {
    compile_with(arch, rules, ENOSYS)
}

/// `compile`, numbers past the table getting `unknown` (`--explain`: the
/// warden, which answers ENOSYS).
pub fn compile_with(arch: Arch, rules: &[Rules], unknown: u32) -> Vec<Insn> {
    program(arch, rules, [RET_KILL_PROCESS, ENOSYS, unknown])
}

/// `compile` for a filter that only watches (bwrap mode's `QWRAP_EXPLAIN`
/// without its layers): another ABI, an x32 call and a number past the
/// table go on as without it, where `compile` refuses them.
pub fn compile_watch(arch: Arch, rules: &[Rules]) -> Vec<Insn> {
    program(arch, rules, [RET_ALLOW; 3])
}

/// The architecture check, then the numbers: `[another ABI, an x32 call,
/// a number past the table]` get those actions, the rest `dispatch`.
fn program(arch: Arch, rules: &[Rules], [foreign, x32, unknown]: [u32; 3]) -> Vec<Insn> {
    let mut p: Vec<Insn> = vec![
        (LD_W_ABS, 0, 0, OFF_ARCH),
        (JEQ_K, 1, 0, arch.audit()),
        (RET_K, 0, 0, foreign),
        (LD_W_ABS, 0, 0, OFF_NR),
    ];
    if arch == Arch::X86_64 {
        p.push((JSET_K, 0, 1, 0x4000_0000));
        p.push((RET_K, 0, 0, x32));
    }
    p.push((JGE_K, 0, 1, FIRST_UNKNOWN));
    p.push((RET_K, 0, 0, unknown));
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

/// The block of one syscall: each case's conditions, a failing one jumping
/// to the next case; a case that holds returns its action.
fn block(r: &Rules) -> Vec<Insn> {
    let mut b: Vec<Insn> = Vec::new();
    for (conds, action) in &r.cases {
        // Each condition is 2 instructions; a failing test jumps past
        // the rest of this case (its remaining tests and its return).
        for (i, c) in conds.iter().enumerate() {
            let skip = (2 * (conds.len() - i - 1) + 1) as u8;
            let (a, jump_if_true, v) = match *c {
                Cond::Eq(a, v) => (a, (JEQ_K, 0, skip), v),
                Cond::Ne(a, v) => (a, (JEQ_K, skip, 0), v),
                Cond::AnyBit(a, m) => (a, (JSET_K, 0, skip), m),
                Cond::NoBit(a, m) => (a, (JSET_K, skip, 0), m),
            };
            b.push((LD_W_ABS, 0, 0, off_arg(a)));
            b.push((jump_if_true.0, jump_if_true.1, jump_if_true.2, v));
        }
        b.push((RET_K, 0, 0, *action));
        if conds.is_empty() {
            return b;
        }
    }
    b.push((RET_K, 0, 0, RET_ALLOW));
    b
}
