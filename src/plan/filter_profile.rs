// The rules a profile's filter holds: each call's cases by the table
// (filter_rules.rs), and with `--explain` every call that can be refused
// handed to the warden, which answers it by the filters without
// `--explain` (supervise/explain_judge.rs). Compiled by build.rs beside
// filter_rules.rs (included with `#[path]`, so only core, std and the
// sibling modules here).

use super::filter_rules::{
    Arch, Cond, Profile, RET_USER_NOTIF, Rule, Rules, base_cases, is_errno, table_rules,
};

/// The cases of one rule for one call in a profile.
pub fn cases(rule: Rule, name: &str, p: Profile) -> Vec<(Vec<Cond>, u32)> {
    if p.explain {
        explain_cases(rule, name, p)
    } else {
        base_cases(rule, name, p)
    }
}

/// Every rule of a profile, from the table.
pub fn rules(arch: Arch, p: Profile) -> Vec<Rules> {
    table_rules(arch, p, cases)
}

/// `--explain`: the calls that name a path or an address the sandbox may
/// refuse (a write outside the roots, a hidden or absent path, a masked
/// socket), handed to the warden whatever their arguments. Reads count:
/// every open, exec, access check and chdir is one of them (a program in
/// a home directory the view leaves out is "not found"). stat is not: the
/// most frequent call of a build, its ENOENT is most often asked for.
pub const EXPLAINED_CALLS: [&str; 29] = [
    "open",
    "openat",
    "openat2",
    "execve",
    "execveat",
    "access",
    "faccessat",
    "faccessat2",
    "chdir",
    "creat",
    "mkdir",
    "mkdirat",
    "rmdir",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "truncate",
    "mknod",
    "mknodat",
    "chmod",
    "fchmodat",
    "fchmodat2",
    "connect",
];

/// `--explain`: the warden hears every call the filters without it would
/// refuse (the filters stacked on this one fold into it: the keyring calls,
/// and without namespaces the second filter's), and every call of
/// EXPLAINED_CALLS; what it decodes already, as before.
fn explain_cases(rule: Rule, name: &str, p: Profile) -> Vec<(Vec<Cond>, u32)> {
    let folded = super::filter_landlock::KEYRING_CALLS.contains(&name)
        || (p.landlock_only
            && (super::filter_landlock::LANDLOCK_ONLY_REFUSED.contains(&name)
                || matches!(name, "socket" | "socketpair")));
    if folded || EXPLAINED_CALLS.contains(&name) {
        return vec![(vec![], RET_USER_NOTIF)];
    }
    // With Landlock's signal scope the kernel refuses a signal to a
    // process outside: handed to the warden, which judges the target and
    // says it, while the kernel still answers.
    if rule == Rule::Signal && !p.unscoped {
        return vec![(vec![Cond::Ne(0, 0)], RET_USER_NOTIF)];
    }
    // The second filter's ioctls, folded in as its other calls are.
    let inode = super::filter_landlock::INODE_IOCTLS
        .iter()
        .filter(|_| p.landlock_only && name == "ioctl")
        .map(|&(c, _)| (vec![Cond::Eq(1, c)], RET_USER_NOTIF));
    base_cases(rule, name, p.base())
        .into_iter()
        .map(|(c, a)| (c, if is_errno(a) { RET_USER_NOTIF } else { a }))
        .chain(inode)
        .collect()
}
