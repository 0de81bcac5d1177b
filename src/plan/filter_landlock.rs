// `--isolation landlock`'s second seccomp filter: what the host shares
// without namespaces. Compiled by build.rs with filter_rules.rs's compiler
// (it includes this file with `#[path]` beside that one, so only core, std
// and the sibling module here).

use super::filter_rules::{Arch, Cond, EPERM, Rules, table};

/// `--isolation landlock`: the calls that reach what the host shares
/// without namespaces (its keyrings, SysV IPC, POSIX message queues),
/// refused by a second filter.
pub const LANDLOCK_ONLY_REFUSED: [&str; 33] = [
    // Ownership and extended attributes: Landlock has no right for them,
    // so a file of the caller's outside the roots could change.
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "setxattrat",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "removexattrat",
    "file_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "shmget",
    "shmat",
    "shmctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
];
/// The ioctls that change a file's inode flags or attributes (`chattr`:
/// append-only, sync, no-dump; the project and extent hints; fs-verity,
/// which makes a file read-only for good; its generation) on a descriptor
/// opened only for reading: Landlock has no right for them, and without a
/// read-only mount they reached the caller's files outside the roots.
pub const INODE_IOCTLS: [(u32, &str); 6] = [
    (0x4008_6602, "FS_IOC_SETFLAGS"),
    (0x4004_6602, "FS_IOC32_SETFLAGS"),
    (0x401c_5820, "FS_IOC_FSSETXATTR"),
    (0x4080_6685, "FS_IOC_ENABLE_VERITY"),
    (0x4008_7602, "FS_IOC_SETVERSION"),
    (0x4004_7602, "FS_IOC32_SETVERSION"),
];

/// The keyring calls: refused by a filter of their own in `run` (unless
/// `--share-keyring`), so that the caller's session and user keyrings are
/// out of reach without making a keyring, which would spend the caller's
/// key quota on every sandbox.
pub const KEYRING_CALLS: [&str; 3] = ["keyctl", "add_key", "request_key"];

/// The keyring filter's rules: KEYRING_CALLS refused with EPERM.
pub fn keyring_rules(arch: Arch) -> Vec<Rules> {
    table()
        .into_iter()
        .filter(|s| s.nr_on(arch) >= 0 && KEYRING_CALLS.contains(&s.name))
        .map(|s| Rules {
            nr: s.nr_on(arch),
            name: s.name,
            cases: vec![(vec![], EPERM)],
        })
        .collect()
}

/// The Unix domain's address family (`AF_UNIX`, `AF_LOCAL`).
const AF_UNIX: u32 = 1;
/// The datagram type's bit: of the Unix domain's types (stream 1, datagram
/// 2, seqpacket 5) only the datagram one has it.
const SOCK_DGRAM: u32 = 2;

/// `--isolation landlock`'s second filter: socket(AF_UNIX) refused (a host
/// pathname socket cannot be masked without a mount namespace), every
/// socket with the network closed, a datagram socketpair (its `sendto`
/// names any host pathname socket; a stream or seqpacket pair's cannot),
/// the INODE_IOCTLS, and LANDLOCK_ONLY_REFUSED.
pub fn landlock_only_rules(arch: Arch, closed: bool) -> Vec<Rules> {
    table()
        .into_iter()
        .filter(|s| s.nr_on(arch) >= 0)
        .filter_map(|s| {
            let cases = match s.name {
                "socket" if closed => vec![(vec![], EPERM)],
                "socket" => vec![(vec![Cond::Eq(0, AF_UNIX)], EPERM)],
                "socketpair" => vec![(vec![Cond::Eq(0, AF_UNIX), Cond::AnyBit(1, SOCK_DGRAM)], EPERM)],
                "ioctl" => INODE_IOCTLS
                    .iter()
                    .map(|&(c, _)| (vec![Cond::Eq(1, c)], EPERM))
                    .collect(),
                n if LANDLOCK_ONLY_REFUSED.contains(&n) => vec![(vec![], EPERM)],
                _ => return None,
            };
            Some(Rules {
                nr: s.nr_on(arch),
                name: s.name,
                cases,
            })
        })
        .collect()
}
