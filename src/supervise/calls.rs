//! What the warden decides for one trapped call: whom it is aimed at, by
//! the rule the syscall table gives it (plan::filter_rules), so that the
//! filter and the warden read one list. Only arguments passed in registers
//! are read: nothing the caller could change after the check.

use crate::plan::filter_rules::{Arch, Rule, rule_of};
use crate::sys::Notification;
use crate::sys::kernel as k;
use rustix::fd::{AsFd, OwnedFd};

/// Who a trapped call is aimed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Aimed {
    Pid(i32),
    Group(i32),
    /// Everything of the user's (kill(-1), PRIO_USER, IOPRIO_WHO_USER).
    Everyone,
    /// Nothing outside the caller (pid 0 and the like).
    Caller,
}

/// The rules whose calls the warden decodes (a unit test holds this to
/// every rule that can return USER_NOTIF); the first two, a file's mode
/// bits and times (`--isolation landlock`), in metadata.rs.
pub(super) const DECODED: [Rule; 8] = [
    Rule::SetidMode,
    Rule::Times,
    Rule::Signal,
    Rule::Target,
    Rule::Setpriority,
    Rule::Ioprio,
    Rule::Fcntl,
    Rule::Unshare,
];

/// The target of a trapped call (`clone` is trapped only with
/// CLONE_NEWUSER, as unshare).
pub(super) fn target(n: &Notification) -> Aimed {
    let a = n.args;
    let int = |x: u64| x as u32 as i32;
    let nr = i64::from(n.nr);
    let rule = rule_of(Arch::HERE, nr);
    if !DECODED.contains(&rule) && rule != Rule::Clone {
        return Aimed::Everyone;
    }
    match rule {
        Rule::Signal if nr == libc::SYS_kill => match int(a[0]) {
            0 => Aimed::Group(0),
            -1 => Aimed::Everyone,
            p if p < 0 => Aimed::Group(-p),
            p => Aimed::Pid(p),
        },
        // PRIO_PROCESS 0, PRIO_PGRP 1, PRIO_USER 2.
        Rule::Setpriority => match (a[0], int(a[1])) {
            (0, 0) => Aimed::Caller,
            (0, p) => Aimed::Pid(p),
            (1, g) => Aimed::Group(g),
            _ => Aimed::Everyone,
        },
        // IOPRIO_WHO_PROCESS 1, _PGRP 2, _USER 3.
        Rule::Ioprio => match (a[0], int(a[1])) {
            (1, 0) => Aimed::Caller,
            (1, p) => Aimed::Pid(p),
            (2, g) => Aimed::Group(g),
            _ => Aimed::Everyone,
        },
        // Only F_SETOWN comes here; its owner is the register argument.
        Rule::Fcntl => match int(a[2]) {
            0 => Aimed::Caller,
            p if p < 0 => Aimed::Group(-p),
            p => Aimed::Pid(p),
        },
        // Only with CLONE_NEWUSER: the caller's own namespace.
        Rule::Unshare | Rule::Clone => Aimed::Caller,
        // tkill(tid), tgkill(tgid, …), rt_sigqueueinfo(pid, …),
        // rt_tgsigqueueinfo(tgid, …), prlimit64(pid), sched_*(pid),
        // migrate_pages(pid), move_pages(pid).
        Rule::Signal | Rule::Target => match int(a[0]) {
            0 => Aimed::Caller,
            p => Aimed::Pid(p),
        },
        _ => Aimed::Everyone,
    }
}

/// Whether a trapped call makes a user namespace (unshare, clone with
/// CLONE_NEWUSER).
pub(super) fn makes_user_namespace(n: &Notification) -> bool {
    let nr = i64::from(n.nr);
    (nr == libc::SYS_unshare || nr == libc::SYS_clone) && n.args[0] & libc::CLONE_NEWUSER as u64 != 0
}

/// The sandbox's user namespace, and the question whether a process is in
/// it or in one made inside it (any depth). Without a user namespace of
/// its own (`--isolation landlock`), the question is whether the process
/// descends from the command.
pub(super) struct Sandbox {
    dev: u64,
    ino: u64,
    /// Held open so that the namespace, and with it its inode number, is
    /// not freed and given to another (a later sandbox's, whose processes
    /// the leftovers' end would take for these) while the warden lives.
    _pinned: Option<OwnedFd>,
    /// The command's pid.
    command: i32,
    /// The command is in the warden's own user namespace.
    no_namespace: bool,
    /// The reaper: inside, but no call of the sandbox may reach it.
    pub(super) spare: Option<i32>,
}

impl Sandbox {
    /// The user namespace of `pid` (the command, before it runs).
    pub(super) fn of(pid: i32) -> Option<Sandbox> {
        let ns = open_ns(pid)?;
        let m = k::fstat(&ns).ok()?;
        let own = k::statat(
            rustix::fs::CWD,
            "/proc/self/ns/user",
            rustix::fs::AtFlags::empty(),
        )
        .ok()?;
        Some(Sandbox {
            dev: m.st_dev,
            ino: m.st_ino,
            _pinned: Some(ns),
            command: pid,
            no_namespace: (own.st_dev, own.st_ino) == (m.st_dev, m.st_ino),
            spare: None,
        })
    }

    /// PID 1 of the sandbox's own PID namespace and every process that
    /// descends from it: no process can leave a PID namespace, and its
    /// orphans go to its PID 1. Judged by the parents /proc/PID/stat gives,
    /// which any process may read (PID 1 is not dumpable: its namespaces
    /// are not another user's to read).
    pub(super) fn below(init: i32) -> Sandbox {
        Sandbox {
            dev: 0,
            ino: 0,
            _pinned: None,
            command: init,
            no_namespace: true,
            spare: None,
        }
    }

    /// Whether `pid` is inside: in the sandbox's user namespace or one made
    /// inside it, or, without one, a descendant of the command.
    pub(super) fn holds(&self, pid: i32) -> Option<bool> {
        if self.no_namespace {
            return descends(pid, self.command);
        }
        self.in_namespace(pid)
    }

    /// The owners are walked up with NS_GET_PARENT, which stops (EPERM) at
    /// the warden's own namespace.
    fn in_namespace(&self, pid: i32) -> Option<bool> {
        let mut ns = open_ns(pid)?;
        for _ in 0..33 {
            let st = crate::sys::kernel::fstat(&ns).ok()?;
            if st.st_dev == self.dev && st.st_ino == self.ino {
                return Some(true);
            }
            match crate::sys::ns_get_parent(ns.as_fd()) {
                Ok(parent) => ns = parent,
                Err(_) => return Some(false),
            }
        }
        Some(false)
    }

    /// What the call meets: None when it may go on (every process it
    /// reaches is inside), else the errno it gets. Every judgment fails
    /// closed: a process whose namespace or parent cannot be read (a
    /// non-dumpable one's /proc entry refuses us) counts as outside; one
    /// that is gone gets ESRCH, as the kernel would answer, so that a
    /// `kill -0` loop still sees it end.
    pub(super) fn refuses(&self, n: &Notification) -> Option<i32> {
        let outside = Some(libc::EPERM);
        match target(n) {
            Aimed::Caller => None,
            Aimed::Pid(p) | Aimed::Group(p) if Some(p) == self.spare => outside,
            Aimed::Pid(p) => match self.holds(p) {
                Some(true) => None,
                Some(false) => outside,
                None if gone(p) => Some(libc::ESRCH),
                None => outside,
            },
            Aimed::Group(0) => match group_of(n.pid as i32) {
                Some(g) if self.group_inside(g) => None,
                _ => outside,
            },
            Aimed::Group(g) if self.group_inside(g) => None,
            Aimed::Group(_) | Aimed::Everyone => outside,
        }
    }

    /// A signal to every process of the sandbox /proc shows (but the
    /// warden and the reaper).
    pub(super) fn signal_all(&self, sig: rustix::process::Signal) {
        let me = std::process::id() as i32;
        for p in processes().filter(|&p| p != me && Some(p) != self.spare) {
            if self.holds(p) == Some(true)
                && let Some(pid) = rustix::process::Pid::from_raw(p)
            {
                let _ = crate::sys::kernel::kill_process(pid, sig);
            }
        }
    }

    /// Every member of the process group is inside (a member gone
    /// meanwhile is none; one that cannot be read is outside).
    fn group_inside(&self, group: i32) -> bool {
        processes().all(|p| group_of(p) != Some(group) || self.holds(p).unwrap_or_else(|| gone(p)))
    }
}

/// Whether a process is gone: its /proc entry no longer exists.
fn gone(pid: i32) -> bool {
    k::lstat(format!("/proc/{pid}")).is_err_and(|e| e == rustix::io::Errno::NOENT)
}

/// A process's user namespace, held.
fn open_ns(pid: i32) -> Option<OwnedFd> {
    let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC;
    k::open(format!("/proc/{pid}/ns/user"), flags, rustix::fs::Mode::empty()).ok()
}

/// Whether `pid` is `ancestor` or descends from it, by the parents /proc
/// gives (None: `pid` is gone). A process reparented away from the
/// command (its parent died) no longer descends from it: it counts as
/// outside, so a call aimed at it is refused, never wrongly allowed.
fn descends(pid: i32, ancestor: i32) -> Option<bool> {
    let mut p = pid;
    for _ in 0..4096 {
        if p == ancestor {
            return Some(true);
        }
        if p <= 1 {
            return Some(false);
        }
        let parent = parent_of(p);
        if p == pid && parent.is_none() {
            return None;
        }
        p = parent.unwrap_or(0);
    }
    Some(false)
}

/// The parent of a process, from /proc/PID/stat (after the comm).
fn parent_of(pid: i32) -> Option<i32> {
    stat_field(pid, 1)
}

/// The processes in /proc.
pub(super) fn processes() -> impl Iterator<Item = i32> {
    let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
    k::open("/proc", flags, rustix::fs::Mode::empty())
        .and_then(|d| k::dir_entries(&d, usize::MAX))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(name, _)| name.to_str()?.parse().ok())
}

/// The process group of a process, from /proc/PID/stat (after the comm).
fn group_of(pid: i32) -> Option<i32> {
    stat_field(pid, 2)
}

/// Field `n` after the state in /proc/PID/stat (1: the parent, 2: the
/// process group), read past the comm, which may hold spaces.
fn stat_field(pid: i32, n: usize) -> Option<i32> {
    stat_after_comm(pid)?.split_whitespace().nth(n)?.parse().ok()
}

/// /proc/PID/stat from the state on (the comm, which may hold spaces and
/// parentheses, ends at the last `)`).
pub(super) fn stat_after_comm(pid: i32) -> Option<String> {
    let stat = k::read_file(std::path::Path::new(&format!("/proc/{pid}/stat"))).ok()?;
    let stat = String::from_utf8_lossy(&stat);
    Some(stat.get(stat.rfind(')')? + 2..)?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::filter_profile::cases;
    use crate::plan::filter_rules::{Profile, RET_USER_NOTIF, table};

    /// Every rule that can hand a call to the warden is one it decodes, and
    /// it decodes no other: the two lists are the table's.
    #[test]
    fn the_warden_decodes_exactly_the_rules_that_notify() {
        let mut notifying: Vec<Rule> = Vec::new();
        for s in table() {
            for (_, p) in Profile::all().into_iter().filter(|(_, p)| !p.explain) {
                if cases(s.rule, s.name, p).iter().any(|(_, a)| *a == RET_USER_NOTIF)
                    && !notifying.contains(&s.rule)
                {
                    notifying.push(s.rule);
                }
            }
        }
        // clone is decoded with unshare (CLONE_NEWUSER).
        let mut decoded: Vec<Rule> = DECODED.to_vec();
        decoded.push(Rule::Clone);
        notifying.sort_unstable();
        decoded.sort_unstable();
        assert_eq!(notifying, decoded);
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn targets() {
        let n = |nr: i32, args: &[u64]| {
            let mut a = [0u64; 6];
            a[..args.len()].copy_from_slice(args);
            Notification {
                id: 1,
                pid: 1,
                nr,
                args: a,
            }
        };
        assert_eq!(target(&n(62, &[(-1i64) as u64, 9])), Aimed::Everyone);
        assert_eq!(target(&n(62, &[(-7i64) as u64, 9])), Aimed::Group(7));
        assert_eq!(target(&n(62, &[0, 9])), Aimed::Group(0));
        assert_eq!(target(&n(62, &[42, 9])), Aimed::Pid(42));
        assert_eq!(target(&n(200, &[42, 9])), Aimed::Pid(42)); // tkill
        assert_eq!(target(&n(72, &[3, 8, 42])), Aimed::Pid(42)); // F_SETOWN
        assert_eq!(target(&n(72, &[3, 8, (-42i64) as u64])), Aimed::Group(42));
        assert_eq!(target(&n(302, &[0])), Aimed::Caller);
        assert_eq!(target(&n(141, &[2, 0])), Aimed::Everyone);
        assert_eq!(target(&n(56, &[0x10000000])), Aimed::Caller); // clone(CLONE_NEWUSER)
        assert_eq!(target(&n(0, &[])), Aimed::Everyone);
    }
}
