//! The seccomp filter's rules in words: what `qwrap plan` prints for a
//! profile, and docs/security.md's table of every call and how it is held
//! (a test holds the document to it). Apart from filter_rules.rs, which
//! build.rs compiles on its own.

use super::filter_rules::{Arch, FIRST_UNKNOWN, Profile, Rule, Syscall, table};

/// The filter of a profile on this architecture, as `qwrap plan` prints it
/// (`--explain`'s additions apart: `explained`).
pub fn described(p: Profile) -> String {
    describe(Arch::HERE, p.base())
}

/// `--explain`'s filter beside the rules it answers by.
pub fn explained(landlock_only: bool, scoped: bool) -> String {
    let signals: Vec<&str> = table()
        .iter()
        .filter(|s| s.rule == Rule::Signal)
        .map(|s| s.name)
        .collect();
    format!(
        " with --explain as USER_NOTIF: every EPERM and ENOSYS above, syscalls >= {FIRST_UNKNOWN}, {}{}{}, the warden answering each as above{}",
        super::filter_profile::EXPLAINED_CALLS.join("/"),
        format_args!("/{}", super::filter_landlock::KEYRING_CALLS.join("/")),
        if landlock_only {
            format!(
                "/socket/socketpair/ioctl({})/{}",
                super::filter_landlock::INODE_IOCTLS.map(|(_, n)| n).join("|"),
                super::filter_landlock::LANDLOCK_ONLY_REFUSED.join("/")
            )
        } else {
            String::new()
        },
        if scoped {
            format!(
                "; {}(pid != 0): the warden says what Landlock's signal scope refuses, the kernel answers",
                signals.join("/")
            )
        } else {
            String::new()
        }
    )
}

/// What a rule does in a profile, in the words `qwrap plan` prints.
pub fn summary(rule: Rule, p: Profile) -> Option<&'static str> {
    let held_by_warden = p.warden && p.unscoped;
    Some(match rule {
        Rule::Ioctl if p.unscoped => "(TIOCSTI|TIOCLINUX|FIOSETOWN|SIOCSPGRP|FIOASYNC) = EPERM",
        Rule::Ioctl => "(TIOCSTI|TIOCLINUX) = EPERM",
        Rule::SetidMode if p.warden && p.landlock_only => {
            "(mode & (S_ISUID|S_ISGID)) = EPERM, else USER_NOTIF"
        }
        Rule::SetidMode => "(mode & (S_ISUID|S_ISGID)) = EPERM",
        Rule::Times if p.warden && p.landlock_only => " = USER_NOTIF",
        Rule::SetidCreate => "(O_CREAT|O_TMPFILE, mode & (S_ISUID|S_ISGID)) = EPERM",
        Rule::Enosys => " = ENOSYS",
        Rule::Xattr if p.root => " = EPERM",
        Rule::Target if p.warden => "(pid != 0) = USER_NOTIF",
        Rule::Setpriority | Rule::Ioprio if p.warden => "(not the caller) = USER_NOTIF",
        Rule::Signal if held_by_warden => " = USER_NOTIF",
        Rule::PidfdSignal if held_by_warden => " = ENOSYS",
        Rule::Clone | Rule::Unshare if p.warden => "(CLONE_NEWCGROUP) = EPERM, (CLONE_NEWUSER) = USER_NOTIF",
        Rule::Clone | Rule::Unshare => "(CLONE_NEWCGROUP) = EPERM",
        Rule::Clone3 => " = ENOSYS",
        Rule::Fcntl if held_by_warden => "(F_SETOWN) = USER_NOTIF, (F_SETOWN_EX, F_SETFL|O_ASYNC) = EPERM",
        Rule::Fcntl if p.unscoped => "(F_SETOWN_EX, F_SETFL|O_ASYNC) = EPERM",
        _ => return None,
    })
}

/// The filter in the words `qwrap plan` prints: the calls of each rule and
/// what it does, in the table's order, then the rest.
pub fn describe(arch: Arch, p: Profile) -> String {
    let mut groups: Vec<(Rule, Vec<&'static str>)> = Vec::new();
    for s in table() {
        if s.nr_on(arch) < 0 || summary(s.rule, p).is_none() {
            continue;
        }
        match groups.iter_mut().find(|(r, _)| *r == s.rule) {
            Some((_, names)) => names.push(s.name),
            None => groups.push((s.rule, vec![s.name])),
        }
    }
    let mut parts: Vec<String> = groups
        .iter()
        .map(|(rule, names)| format!("{}{}", names.join("/"), summary(*rule, p).unwrap_or_default()))
        .collect();
    parts.push(format!("syscalls >= {FIRST_UNKNOWN} = ENOSYS, otherwise allow"));
    format!("{{{}}}", parts.join(", "))
}

/// How a rule holds its calls, in the words of docs/security.md's table:
/// on Linux ≥ 6.12 (Landlock's signal scope) and before.
fn held(s: &Syscall) -> (String, String) {
    let warden = "the warden: allowed when every target is the sandbox's, EPERM otherwise";
    let both = |t: &str| (t.to_string(), t.to_string());
    match s.rule {
        Rule::Kernel => both(s.held),
        Rule::Unshare => both(&format!(
            "{}; CLONE_NEWCGROUP: EPERM (a cgroup namespace is rooted at the caller's cgroup, and a cgroup filesystem mounted in it reaches the host's groups below: freeze, kill); with CLONE_NEWUSER in the shared PID mode, the warden lets it go on and says once that the new namespace cannot be given its id maps there (--pid private can)",
            s.held
        )),
        Rule::Signal => ("Landlock signal scope (EPERM)".into(), warden.into()),
        Rule::PidfdSignal => (
            "Landlock signal scope (EPERM)".into(),
            "ENOSYS (its target is a descriptor another thread could swap; callers fall back to kill)".into(),
        ),
        Rule::Fcntl => (
            "Landlock signal scope: SIGIO and SIGURG reach only the sandbox".into(),
            "F_SETOWN: the warden; F_SETOWN_EX and F_SETFL with O_ASYNC: EPERM (the owner is in the caller's memory; a terminal's owner is its foreground group)".into(),
        ),
        Rule::Ioctl => (
            "TIOCSTI, TIOCLINUX: EPERM; SIGIO owners: Landlock signal scope".into(),
            "TIOCSTI, TIOCLINUX, FIOSETOWN, SIOCSPGRP, FIOASYNC: EPERM".into(),
        ),
        Rule::Target | Rule::Setpriority | Rule::Ioprio => both(warden),
        Rule::Clone3 => both(
            "ENOSYS: its flags lie in memory seccomp cannot read (callers fall back to clone, whose flags it can)",
        ),
        Rule::Clone => both(
            "as fork; CLONE_NEWCGROUP: EPERM (a cgroup namespace is rooted at the caller's cgroup, and a cgroup filesystem mounted in it reaches the host's groups below: freeze, kill); with CLONE_NEWUSER in the shared PID mode, the warden lets it go on and says once that the new namespace cannot be given its id maps there (--pid private can)",
        ),
        Rule::SetidMode => both(
            "EPERM with S_ISUID or S_ISGID in the mode; with `--isolation landlock` (no read-only mount holds a file's mode) the warden changes the mode only of a file where Landlock lets the command write, and owned by it, EPERM elsewhere",
        ),
        Rule::SetidCreate => both("EPERM with S_ISUID or S_ISGID in the mode"),
        Rule::Times => both(
            "allowed: outside the writable roots the read-only mounts refuse it; with `--isolation landlock` the warden changes the times only of a file where Landlock lets the command write, and owned by it, EPERM elsewhere",
        ),
        Rule::Enosys => both("ENOSYS (callers fall back; io_uring is a syscall table seccomp cannot see)"),
        Rule::Xattr => both("root: EPERM (a file capability from a nested user namespace would hold on the host); others: the kernel writes a capability rooted at the caller's uid, which grants nothing on the host"),
        _ => both("-"),
    }
}

/// docs/security.md's table: every call of the four classes and how it
/// is held, in the table's order (a test holds the document to it).
pub fn doc_table() -> String {
    let mut out = String::from(
        "| call (x86_64 nr) | class | Linux ≥ 6.12 | before 6.12, or `--landlock off` |\n|---|---|---|---|\n",
    );
    for s in table().iter().filter(|s| s.class != "-") {
        let (now, before) = held(s);
        out += &format!(
            "| `{}` ({}) | {} | {} | {} |\n",
            s.name, s.nr, s.class, now, before
        );
    }
    out += &format!("| every number from {FIRST_UNKNOWN} on | - | ENOSYS | ENOSYS |\n");
    out
}
