//! `--explain`: the words for a refusal the warden saw — why the sandbox
//! refuses it and which option, if any, would allow it.

use super::refusal::{Kind, Refusal, show};
use crate::plan::explain::{Explain, Marked};
use crate::plan::filter_landlock::{KEYRING_CALLS, LANDLOCK_ONLY_REFUSED};
use crate::plan::filter_rules::{DENIED_IOCTLS, FIRST_UNKNOWN, OWNER_IOCTLS, Rule};
use crate::sys::Notification;
use std::path::Path;

/// A call the filters refuse with `errno`: which, and why.
pub(super) fn filtered(
    orders: &Explain,
    name: &'static str,
    rule: Rule,
    n: &Notification,
    errno: i32,
) -> Refusal {
    let arg = |i: usize| n.args[i] as u32;
    let mut target = name.to_string();
    let mut op = name.to_string();
    let (reason, option): (&str, Option<&str>) = if n.nr as u32 >= FIRST_UNKNOWN || name == "-" {
        target = format!("syscall {}", n.nr);
        op = target.clone();
        (
            "newer than this qwrap's syscall table, so no rule has looked at it",
            None,
        )
    } else if orders.keyrings && KEYRING_CALLS.contains(&name) {
        ("the caller's keyrings are out of reach", Some("--share-keyring"))
    } else if orders.second.is_some() && matches!(name, "socket" | "socketpair") {
        if orders.second == Some(true) && !(arg(0) == 1 && name == "socket") {
            (
                "no socket with the network closed and no namespaces",
                Some("--network open"),
            )
        } else {
            (
                "no Unix socket can be made without namespaces (a host socket could not be masked)",
                None,
            )
        }
    } else if orders.second.is_some() && LANDLOCK_ONLY_REFUSED.contains(&name) {
        (
            "the host's, which Landlock alone cannot fence: refused without namespaces",
            None,
        )
    } else {
        match rule {
            Rule::Ioctl => {
                let known = DENIED_IOCTLS
                    .iter()
                    .chain(OWNER_IOCTLS.iter())
                    .find(|(c, _)| *c == arg(1));
                if let Some((_, ioctl)) = known {
                    target = format!("ioctl {ioctl}");
                }
                (
                    "it types into the terminal, drives the console or chooses a SIGIO owner",
                    None,
                )
            }
            Rule::SetidMode | Rule::SetidCreate => {
                ("a setuid or setgid bit, which would hold on the host", None)
            }
            Rule::Enosys => (
                "a call the filter cannot see into (openat2's mode, io_uring's own calls): callers fall back",
                None,
            ),
            Rule::Xattr => (
                "root's sandbox writes no extended attribute (a file capability would hold on the host)",
                None,
            ),
            Rule::Fcntl => ("it names a SIGIO owner the warden cannot check", None),
            Rule::Clone3 => (
                "its flags lie in memory the filter cannot read: callers fall back to clone (glibc does at every fork), whose flags it can",
                None,
            ),
            Rule::PidfdSignal => (
                "its target is a descriptor another thread could swap: callers fall back to kill",
                None,
            ),
            _ => ("refused by the filter", None),
        }
    };
    Refusal {
        kind: Kind::Call,
        op,
        target,
        errno: Some(errno),
        reason: reason.into(),
        option: option.map(String::from),
    }
}

/// A call aimed at a process outside the sandbox, refused by the warden.
pub(super) fn outside(name: &str, errno: i32) -> Refusal {
    Refusal {
        kind: Kind::Call,
        op: name.into(),
        target: name.into(),
        errno: Some(errno),
        reason: "it reaches a process outside the sandbox".into(),
        option: None,
    }
}

/// Why a write is refused, and what would allow it.
pub(super) fn write(
    orders: &Explain,
    path: &Path,
    parent: &Path,
    read_only: Option<&Marked>,
) -> (i32, String, Option<String>) {
    let errno = if orders.landlock_only {
        libc::EACCES
    } else {
        libc::EROFS
    };
    if let Some(m) = read_only {
        return (errno, m.why.clone(), m.allow.clone());
    }
    let outside = "outside the writable roots".to_string();
    if ["/proc", "/sys"].iter().any(|s| path.starts_with(s)) {
        return (errno, "the kernel's files are read-only inside".into(), None);
    }
    if orders.bwrap.is_some() {
        // bwrap mode's view is the caller's own: a destination bound
        // read-only, or one no option bound writable.
        return (
            errno,
            "a read-only mount of the sandbox's view".into(),
            Some(format!("--bind SRC {} (a writable bind)", show(parent))),
        );
    }
    if let Some(home) = &orders.home
        && path.starts_with(home)
    {
        if orders.landlock_only {
            return (errno, format!("{outside}: the home is read-only"), None);
        }
        return (
            errno,
            format!("{outside}: the home is read-only (its writes could land in the workspace's layer)"),
            Some("--home overlay".into()),
        );
    }
    // The nearest directory that exists on the host: what an include
    // would grant.
    let mut dir = parent;
    while !dir.is_dir() {
        match dir.parent() {
            Some(p) => dir = p,
            None => break,
        }
    }
    // Without namespaces a git checkout's top is granted entry by entry (a
    // rule on the directory would take `.git` in): a new name there is
    // refused though it is a writable root, and `--include` would not help.
    if orders.landlock_only && crate::sys::kernel::lstat(dir.join(".git")).is_ok() {
        return (
            errno,
            "a new name at the top of a git workspace: without namespaces only its entries are writable (Landlock cannot leave .git out of the directory); make it in a subdirectory".into(),
            None,
        );
    }
    let ancestor_of_home = orders.home.as_deref().is_some_and(|h| h.starts_with(dir));
    if dir == Path::new("/") || ancestor_of_home {
        return (errno, outside, None);
    }
    (errno, outside, Some(format!("--include {}", show(dir))))
}
