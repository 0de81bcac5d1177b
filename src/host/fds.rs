//! The descriptors qwrap inherited without close-on-exec: what each one is,
//! so that the planner can decide which of them may reach the command.

use serde::Serialize;
use std::path::PathBuf;

/// What an inherited descriptor refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FdKind {
    /// A terminal.
    Terminal,
    /// Another character device (/dev/null…).
    CharDevice,
    BlockDevice,
    Directory,
    RegularFile,
    /// A pipe or FIFO.
    Pipe,
    /// A connected stream or seqpacket socket: it cannot be pointed
    /// elsewhere.
    ConnectedSocket,
    /// A listening, unconnected or datagram socket: it could reach or accept
    /// from the namespace it was made in.
    OtherSocket,
    /// An anonymous inode (eventfd, pidfd, epoll, io_uring…), or unknown.
    Other,
}

impl std::fmt::Display for FdKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Terminal => "terminal",
            Self::CharDevice => "character device",
            Self::BlockDevice => "block device",
            Self::Directory => "directory",
            Self::RegularFile => "file",
            Self::Pipe => "pipe",
            Self::ConnectedSocket => "connected socket",
            Self::OtherSocket => "unconnected or listening socket",
            Self::Other => "anonymous inode",
        })
    }
}

/// One inherited descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InheritedFd {
    pub fd: i32,
    pub kind: FdKind,
    /// What /proc/self/fd/N names (a path, `pipe:[…]`, `socket:[…]`…);
    /// empty for a device whose path no longer leads to it.
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
    /// Opened for writing.
    pub writable: bool,
    /// A file or directory no name leads to any more (link count 0).
    pub unlinked: bool,
}

impl InheritedFd {
    /// A descriptor opened read-only, its name still linked.
    pub fn new(fd: i32, kind: FdKind, target: impl Into<PathBuf>) -> Self {
        InheritedFd {
            fd,
            kind,
            target: target.into(),
            writable: false,
            unlinked: false,
        }
    }
}

/// The open descriptors without close-on-exec, in order.
pub fn inventory() -> Vec<InheritedFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut fds: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort_unstable();
    fds.into_iter().filter_map(inspect).collect()
}

fn inspect(fd: i32) -> Option<InheritedFd> {
    use rustix::fs::FileType;
    let kind = crate::sys::with_inherited_fd(fd, |b| {
        let flags = rustix::io::fcntl_getfd(b).ok()?;
        if flags.contains(rustix::io::FdFlags::CLOEXEC) {
            return None;
        }
        let st = rustix::fs::fstat(b).ok()?;
        let access = rustix::fs::fcntl_getfl(b).ok()? & rustix::fs::OFlags::RWMODE;
        let kind = match FileType::from_raw_mode(st.st_mode) {
            FileType::CharacterDevice if rustix::termios::isatty(b) => FdKind::Terminal,
            FileType::CharacterDevice => FdKind::CharDevice,
            FileType::BlockDevice => FdKind::BlockDevice,
            FileType::Directory => FdKind::Directory,
            FileType::RegularFile => FdKind::RegularFile,
            FileType::Fifo => FdKind::Pipe,
            FileType::Socket => socket_kind(b),
            _ => FdKind::Other,
        };
        Some((kind, access, st.st_nlink == 0))
    })
    .ok()??;
    let (kind, access, unlinked) = (kind.0, kind.1, kind.2);
    let mut target = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
    // A device is reopened by its path: the path must still lead to it (a
    // console after switch_root reads "/dev/console (deleted)"), and the
    // caller must be allowed to open it (su keeps a terminal only root may).
    if matches!(kind, FdKind::Terminal | FdKind::CharDevice)
        && !(same_device(fd, &target) && may_open(&target, access))
    {
        target = PathBuf::new();
    }
    // A file or directory is reopened by its path (--pid private) only
    // where the path still leads to it.
    if matches!(kind, FdKind::RegularFile | FdKind::Directory) && !same_file(fd, &target) {
        target = PathBuf::new();
    }
    Some(InheritedFd {
        fd,
        kind,
        target,
        writable: access != rustix::fs::OFlags::RDONLY,
        unlinked,
    })
}

fn same_file(fd: i32, path: &std::path::Path) -> bool {
    let Ok(by_path) = rustix::fs::stat(path) else {
        return false;
    };
    crate::sys::with_inherited_fd(fd, |b| {
        rustix::fs::fstat(b).is_ok_and(|st| st.st_dev == by_path.st_dev && st.st_ino == by_path.st_ino)
    })
    .unwrap_or(false)
}

fn may_open(path: &std::path::Path, access: rustix::fs::OFlags) -> bool {
    use rustix::fs::{Access, OFlags};
    let want = match access {
        OFlags::WRONLY => Access::WRITE_OK,
        OFlags::RDWR => Access::READ_OK | Access::WRITE_OK,
        _ => Access::READ_OK,
    };
    rustix::fs::access(path, want).is_ok()
}

fn same_device(fd: i32, path: &std::path::Path) -> bool {
    let Ok(by_path) = rustix::fs::stat(path) else {
        return false;
    };
    crate::sys::with_inherited_fd(fd, |b| {
        rustix::fs::fstat(b).is_ok_and(|st| st.st_rdev == by_path.st_rdev)
    })
    .unwrap_or(false)
}

fn socket_kind(b: rustix::fd::BorrowedFd<'_>) -> FdKind {
    use rustix::net::{SocketType, sockopt};
    let stream = matches!(
        sockopt::socket_type(b),
        Ok(SocketType::STREAM) | Ok(SocketType::SEQPACKET)
    );
    let listening = sockopt::socket_acceptconn(b).unwrap_or(true);
    let connected = rustix::net::getpeername(b).is_ok_and(|a| a.is_some());
    if stream && !listening && connected {
        FdKind::ConnectedSocket
    } else {
        FdKind::OtherSocket
    }
}
