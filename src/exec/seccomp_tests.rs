use crate::plan::filter_profile::{EXPLAINED_CALLS, cases, rules};
use crate::plan::filter_rules::*;
use crate::plan::filter_text::*;

fn arch() -> Arch {
    Arch::from_target(std::env::consts::ARCH).unwrap()
}

#[test]
fn built_programs_are_the_rules_compiled() {
    let a = arch();
    for (name, profile) in Profile::all() {
        let prog = super::compiled(profile).unwrap_or_else(|| panic!("{name}: not in the lookup"));
        let unknown = if profile.explain { RET_USER_NOTIF } else { ENOSYS };
        assert_eq!(
            compile_with(a, &rules(a, profile), unknown),
            prog.to_vec(),
            "{name}"
        );
    }
    // A profile build.rs did not compile has no program.
    let uncompiled = Profile {
        landlock_only: true,
        ..Profile::PLAIN
    };
    assert!(super::compiled(uncompiled).is_none());
    assert_eq!(DENIED_IOCTLS[0].0 as u64, libc::TIOCSTI);
    assert_eq!(DENIED_IOCTLS[1].0 as u64, libc::TIOCLINUX);
    assert_eq!(OWNER_IOCTLS[2].0 as u64, libc::FIOASYNC);
    assert_eq!(SET_ID_BITS[0].0, libc::S_ISUID);
    assert_eq!(SET_ID_BITS[1].0, libc::S_ISGID);
}

/// The table is the whole x86_64 syscall table: numbers 0-334 and 424 to
/// its end, each once, named as libc names the ones it knows.
#[test]
#[cfg(target_arch = "x86_64")]
fn the_table_is_the_whole_syscall_table() {
    let t = table();
    let nrs: Vec<i64> = t.iter().map(|s| s.nr).collect();
    let want: Vec<i64> = (0..=334).chain(424..i64::from(FIRST_UNKNOWN)).collect();
    assert_eq!(nrs, want);
    for (nr, name) in [
        (libc::SYS_kill, "kill"),
        (libc::SYS_clone3, "clone3"),
        (libc::SYS_io_uring_setup, "io_uring_setup"),
        (libc::SYS_fsetxattr, "fsetxattr"),
        (libc::SYS_pidfd_send_signal, "pidfd_send_signal"),
        (libc::SYS_fchmodat2, "fchmodat2"),
        (libc::SYS_set_mempolicy_home_node, "set_mempolicy_home_node"),
    ] {
        assert_eq!(t.iter().find(|s| s.nr == nr).unwrap().name, name);
    }
    // Every name in the table is a rule's (Rule::named would stop the
    // build otherwise), and every rule's name reads back as it.
    for (rule, name) in Rule::ALL {
        assert_eq!(Rule::named(name), rule);
        assert_eq!(rule.name(), name);
    }
    for s in &t {
        // A call in one of the classes has a rule, and the kernel's (and
        // unshare, the kernel's but for a note) say how.
        assert_eq!(s.class == "-", s.rule == Rule::Unneeded, "{}", s.name);
        assert_eq!(
            matches!(s.rule, Rule::Kernel | Rule::Unshare),
            s.held != "-",
            "{}",
            s.name
        );
        if !matches!(s.rule, Rule::Kernel | Rule::Unneeded) {
            let some = Profile::all()
                .into_iter()
                .any(|(_, p)| !cases(s.rule, s.name, p).is_empty());
            assert!(
                some,
                "{}: rule {} holds nothing in any profile",
                s.name,
                s.rule.name()
            );
        }
    }
}

/// The running kernel has no syscall past the table: if it had, the
/// filter would refuse it (ENOSYS) and the table needs the new row.
#[test]
fn the_kernel_has_nothing_past_the_table() {
    for nr in FIRST_UNKNOWN..FIRST_UNKNOWN + 8 {
        // SAFETY-free: an unknown number with no pointer arguments.
        let r = rustix::io::Errno::from_raw_os_error(probe(nr));
        assert_eq!(r, rustix::io::Errno::NOSYS, "syscall {nr} exists on this kernel");
    }
}

fn probe(nr: u32) -> i32 {
    crate::sys::unknown_syscall_errno(nr)
}

/// The program decides as the rules say, run through an interpreter.
#[test]
#[cfg(target_arch = "x86_64")]
fn decisions() {
    let p = &super::NOTIFY_PROGRAM[..];
    let old = &super::NOTIFY_UNSCOPED_PROGRAM[..];
    let root = &super::NOTIFY_ROOT_PROGRAM[..];
    let plain = &super::PROGRAM[..];
    let x86 = 0xc000_003e;
    let call = |prog: &[Insn], nr: u32, args: [u64; 6]| run(prog, x86, nr, args);
    let a = |v: &[u64]| {
        let mut out = [0u64; 6];
        out[..v.len()].copy_from_slice(v);
        out
    };
    assert_eq!(call(p, 16, a(&[1, 0x5412])), EPERM); // TIOCSTI
    assert_eq!(call(p, 16, a(&[1, 0x5413])), RET_ALLOW); // TIOCGWINSZ
    assert_eq!(call(p, 90, a(&[0, 0o4755])), EPERM); // chmod setuid
    assert_eq!(call(p, 90, a(&[0, 0o755])), RET_ALLOW);
    assert_eq!(call(p, 91, a(&[3, 0o2775])), EPERM); // fchmod setgid
    assert_eq!(call(p, 257, a(&[0, 0, 0o101, 0o4755])), EPERM); // openat O_CREAT setuid
    assert_eq!(call(p, 257, a(&[0, 0, 0o1, 0o4755])), RET_ALLOW); // no O_CREAT
    assert_eq!(call(p, 257, a(&[0, 0, 0o101, 0o644])), RET_ALLOW);
    for prog in [p, old, root, plain] {
        assert_eq!(call(prog, 437, a(&[])), ENOSYS); // openat2
        for nr in [425, 426, 427] {
            assert_eq!(call(prog, nr, a(&[])), ENOSYS); // io_uring
        }
        assert_eq!(call(prog, FIRST_UNKNOWN, a(&[])), ENOSYS);
        assert_eq!(call(prog, 600, a(&[])), ENOSYS);
        assert_eq!(call(prog, 0, a(&[])), RET_ALLOW); // read
    }
    assert_eq!(call(p, 302, a(&[0])), RET_ALLOW); // prlimit64 self
    assert_eq!(call(p, 302, a(&[1234])), RET_USER_NOTIF);
    assert_eq!(call(p, 141, a(&[0, 0, 5])), RET_ALLOW); // setpriority self
    assert_eq!(call(p, 141, a(&[0, 99, 5])), RET_USER_NOTIF);
    assert_eq!(call(p, 141, a(&[2, 0, 5])), RET_USER_NOTIF); // PRIO_USER
    assert_eq!(call(p, 251, a(&[1, 0, 0])), RET_ALLOW); // ioprio self
    assert_eq!(call(p, 251, a(&[3, 0, 0])), RET_USER_NOTIF);
    // Signals and SIGIO owners: the kernel's (Landlock) with the
    // scope, the warden's (or refused) without.
    assert_eq!(call(p, 62, a(&[1, 15])), RET_ALLOW);
    assert_eq!(call(old, 62, a(&[1, 15])), RET_USER_NOTIF);
    assert_eq!(call(p, 424, a(&[3, 15])), RET_ALLOW);
    assert_eq!(call(old, 424, a(&[3, 15])), ENOSYS); // pidfd_send_signal
    assert_eq!(call(old, 72, a(&[3, 8, 1])), RET_USER_NOTIF); // F_SETOWN
    assert_eq!(call(old, 72, a(&[3, 15, 0x7000])), EPERM); // F_SETOWN_EX
    assert_eq!(call(old, 72, a(&[3, 4, 0o20000])), EPERM); // F_SETFL O_ASYNC
    assert_eq!(call(old, 72, a(&[3, 4, 0o4000])), RET_ALLOW); // F_SETFL O_NONBLOCK
    assert_eq!(call(old, 72, a(&[3, 1, 0])), RET_ALLOW); // F_GETFD
    assert_eq!(call(p, 72, a(&[3, 15, 0x7000])), RET_ALLOW);
    for cmd in [0x8901, 0x8902, 0x5452] {
        assert_eq!(call(old, 16, a(&[3, cmd])), EPERM);
        assert_eq!(call(p, 16, a(&[3, cmd])), RET_ALLOW);
    }
    // Forks are never trapped (a held one fails with EINTR when a signal
    // arrives); only a new user namespace is.
    assert_eq!(call(old, 57, a(&[])), RET_ALLOW); // fork
    assert_eq!(call(old, 58, a(&[])), RET_ALLOW); // vfork
    assert_eq!(call(old, 56, a(&[0x11])), RET_ALLOW); // clone(SIGCHLD)
    assert_eq!(call(old, 56, a(&[0x3d0f00])), RET_ALLOW); // a thread
    assert_eq!(call(old, 56, a(&[0x10000011])), RET_USER_NOTIF); // CLONE_NEWUSER
    assert_eq!(call(p, 57, a(&[])), RET_ALLOW);
    // A cgroup namespace is refused in every profile (a cgroup filesystem
    // mounted in it reaches the host's groups below the caller's), also
    // together with a user namespace; clone3's flags cannot be read.
    for prof in [old, p, root, plain] {
        assert_eq!(call(prof, 56, a(&[0x02000011])), EPERM); // clone(CLONE_NEWCGROUP)
        assert_eq!(call(prof, 272, a(&[0x02000000])), EPERM); // unshare
        assert_eq!(call(prof, 272, a(&[0x12020000])), EPERM); // with NEWUSER|NEWNS
        assert_eq!(call(prof, 435, a(&[])), ENOSYS); // clone3
    }
    assert_eq!(call(p, 272, a(&[0x20000])), RET_ALLOW); // unshare(CLONE_NEWNS)
    // Extended attributes: refused to root, whose file capabilities would
    // hold on the host.
    for nr in [188, 189, 190, 463] {
        assert_eq!(call(root, nr, a(&[])), EPERM);
        assert_eq!(call(p, nr, a(&[])), RET_ALLOW);
    }
    // Another ABI is killed; x32 calls fail with ENOSYS.
    assert_eq!(run(p, 0x4000_0003, 0, a(&[])), RET_KILL_PROCESS);
    assert_eq!(call(p, 0x4000_0000 + 90, a(&[0, 0o4755])), ENOSYS);
    // Without the warden, nothing is handed over.
    assert_eq!(call(plain, 302, a(&[1234])), RET_ALLOW);
    assert_eq!(call(plain, 90, a(&[0, 0o4755])), EPERM);
}

#[test]
fn the_description_names_every_rule_call() {
    let a = arch();
    for (name, p) in Profile::all() {
        let text = if p.explain {
            describe(a, p.base()) + &explained(p.landlock_only, !p.unscoped)
        } else {
            describe(a, p)
        };
        for r in rules(a, p) {
            assert!(text.contains(r.name), "{name}: {} missing from {text}", r.name);
        }
    }
}

/// docs/security.md carries the table as the code reads it
/// (`QWRAP_WRITE_DOCS=1` writes it there).
#[test]
fn the_security_doc_carries_the_syscall_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/security.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- syscall table: begin -->\n", "<!-- syscall table: end -->");
    let a = doc.find(start).expect("the table's begin marker") + start.len();
    let b = doc.find(end).expect("the table's end marker");
    let want = doc_table();
    if std::env::var_os("QWRAP_WRITE_DOCS").is_some() {
        std::fs::write(&path, format!("{}{}{}", &doc[..a], want, &doc[b..])).unwrap();
        return;
    }
    assert_eq!(
        &doc[a..b],
        want,
        "docs/security.md's syscall table differs: QWRAP_WRITE_DOCS=1 cargo test"
    );
}

/// `--explain`'s filter refuses nothing and lets nothing go on by itself
/// that the filters without it (the stacked ones folded in) refuse or hand
/// to the warden: each such call goes to the warden, which answers by
/// those filters; what they allow it may let go on, or hear first.
#[test]
fn the_explain_filter_hands_the_warden_every_call_the_others_refuse() {
    use crate::plan::filter_landlock::{keyring_rules, landlock_only_rules};
    let a = arch();
    let audit = a.audit();
    let samples: [[u64; 6]; 6] = [
        [0; 6],
        [1, 0o4755, 0o4755, 0o4755, 0, 0],
        [0, 0x5412, 0o100, 0o6777, 0, 0],
        [3, 8, 42, 0, 0, 0],
        [0x1000_0000, 4, 0o20000, 0, 0, 0],
        [u64::MAX, 2, 1, 0x5452, 0, 0],
    ];
    for (name, p) in Profile::all().into_iter().filter(|(_, p)| p.explain) {
        let explain = compile_with(a, &rules(a, p), RET_USER_NOTIF);
        let mut stacked = vec![compile(a, &rules(a, p.base()))];
        if p.landlock_only {
            stacked.push(compile(a, &landlock_only_rules(a, true)));
        } else {
            stacked.push(compile(a, &keyring_rules(a)));
        }
        for nr in 0..FIRST_UNKNOWN + 10 {
            for args in samples {
                let base = stacked
                    .iter()
                    .map(|prog| run(prog, audit, nr, args))
                    .min_by_key(|r| (r & 0xffff_0000) as i32)
                    .unwrap();
                let got = run(&explain, audit, nr, args);
                if base != RET_ALLOW {
                    assert_eq!(got, RET_USER_NOTIF, "{name}: nr {nr} {args:?}: base {base:#x}");
                } else {
                    assert!(got == RET_ALLOW || got == RET_USER_NOTIF, "{name}: nr {nr}");
                }
            }
        }
        // The calls it judges go to the warden whatever their arguments.
        for call in EXPLAINED_CALLS {
            let s = table().into_iter().find(|s| s.name == call).unwrap();
            if s.nr_on(a) >= 0 {
                assert_eq!(
                    run(&explain, audit, s.nr_on(a) as u32, [0; 6]),
                    RET_USER_NOTIF,
                    "{call}"
                );
            }
        }
    }
}

/// bwrap mode's `QWRAP_EXPLAIN` without its layers: the calls that can be
/// refused go to the monitor and nothing else changes: no call refused,
/// another ABI's, an x32 call and a number past the table let through.
#[test]
fn the_watch_program_hands_over_and_refuses_nothing() {
    let a = arch();
    let prog: Vec<Insn> = super::WATCH_PROGRAM.to_vec();
    let nr = |name: &str| table().into_iter().find(|s| s.name == name).unwrap().nr_on(a) as u32;
    let run = |nr: u32, arch: u32| run(&prog, arch, nr, [0; 6]);
    for name in ["openat", "execve", "mkdir", "unlinkat", "connect", "renameat2"] {
        assert_eq!(run(nr(name), a.audit()), RET_USER_NOTIF, "{name}");
    }
    for name in [
        "getpid",
        "read",
        "ioctl",
        "keyctl",
        "io_uring_setup",
        "openat2",
        "clone3",
    ] {
        let got = run(nr(name), a.audit());
        assert!(
            got == RET_ALLOW || got == RET_USER_NOTIF && name == "openat2",
            "{name}: {got:#x}"
        );
    }
    assert_eq!(run(FIRST_UNKNOWN + 3, a.audit()), RET_ALLOW, "past the table");
    assert_eq!(run(nr("openat"), 0x4000_0003), RET_ALLOW, "another ABI");
    if a == Arch::X86_64 {
        assert_eq!(run(0x4000_0000 | nr("openat"), a.audit()), RET_ALLOW, "x32");
    }
}
