//! Which inherited descriptors reach the command. A descriptor opened before
//! the sandbox refers to the host's mounts, where the sandbox's read-only
//! view and masks do not apply: through a directory fd a command could
//! chmod, chown or touch host files and reach masked sockets, through a
//! terminal fd change the terminal's mode, through a listening or unbound
//! socket reach the host's network. So:
//!
//! - fds 0-2: a character device (terminal, /dev/null) is opened again
//!   through a read-only bind of its own path (I/O works, metadata changes
//!   fail with EROFS); a directory, block device, anonymous inode or
//!   unconnected socket is replaced by /dev/null, opened the same way;
//!   files, pipes and connected sockets stay. The terminal is also shown,
//!   read-only, at /dev/console (as bubblewrap does), where ttyname(3)
//!   finds it: the sandbox's own /dev/pts holds none of the host's.
//! - fds 3 and up: pipes and connected stream sockets (a jobserver, an IPC
//!   channel) stay; everything else is closed at exec, unless `--keep-fd`.
//! - Where no Landlock file rules hold (`--pid private`, `--landlock off`,
//!   a kernel without Landlock), a file or
//!   directory that stays (read-only on 0-2, or kept) could be opened again
//!   for writing through /proc/self/fd, on the host's writable mount: it too
//!   is opened again through a read-only bind of its own path. One no name
//!   leads to any more reaches nothing else and stays; one whose name leads
//!   elsewhere cannot be sealed, and the sandbox does not start.

use crate::host::{FdKind, InheritedFd};
use std::path::PathBuf;

/// What the planner does with the inherited descriptors.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FdPlan {
    /// Device paths to bind read-only over themselves, once each.
    pub binds: Vec<PathBuf>,
    /// fd 0-2 to open again through one of `binds`.
    pub reopen: Vec<(i32, PathBuf)>,
    /// fds from 3 up that stay.
    pub keep: Vec<i32>,
    /// fds from 3 up closed at exec, with what they were.
    pub closed: Vec<(i32, String)>,
    /// The caller's terminal (on fds 0-2), shown read-only at /dev/console
    /// so that ttyname(3) finds it inside.
    pub console: Option<PathBuf>,
    /// Files that would stay writable through /proc/self/fd, with why.
    pub unsealable: Vec<String>,
}

/// `seal_files`: no Landlock file rules hold, so files and directories that
/// stay are reopened read-only too.
pub fn plan(fds: &[InheritedFd], keep_fds: &[i32], seal_files: bool) -> FdPlan {
    let mut p = FdPlan::default();
    let null = PathBuf::from("/dev/null");
    for f in fds {
        let kept = keep_fds.contains(&f.fd);
        let file = matches!(f.kind, FdKind::RegularFile | FdKind::Directory);
        let stays = (f.fd >= 3 && kept) || (f.fd < 3 && f.kind == FdKind::RegularFile);
        if seal_files && file && stays && !f.writable && !f.unlinked {
            if f.target.as_os_str().is_empty() {
                p.unsealable
                    .push(format!("fd {} ({}, its name leads elsewhere now)", f.fd, f.kind));
            } else {
                if !p.binds.contains(&f.target) {
                    p.binds.push(f.target.clone());
                }
                p.reopen.push((f.fd, f.target.clone()));
                if f.fd >= 3 {
                    p.keep.push(f.fd);
                }
            }
            continue;
        }
        let passes = matches!(f.kind, FdKind::Pipe | FdKind::ConnectedSocket);
        if f.fd >= 3 {
            if kept || passes {
                p.keep.push(f.fd);
            } else {
                p.closed
                    .push((f.fd, format!("{} {}", f.kind, f.target.display())));
            }
            continue;
        }
        if kept || passes || f.kind == FdKind::RegularFile {
            continue;
        }
        // A device no path leads to any more, or one the caller may not
        // open, cannot be reopened read-only; it stays as it is (its mode
        // could change, by its owner: docs/security.md).
        if matches!(f.kind, FdKind::Terminal | FdKind::CharDevice) && !f.target.is_absolute() {
            continue;
        }
        let via = match f.kind {
            FdKind::Terminal | FdKind::CharDevice if f.target.is_absolute() => f.target.clone(),
            _ => null.clone(),
        };
        if f.kind == FdKind::Terminal && via != null && p.console.is_none() {
            p.console = Some(via.clone());
        }
        if !p.binds.contains(&via) {
            p.binds.push(via.clone());
        }
        p.reopen.push((f.fd, via));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd(fd: i32, kind: FdKind, target: &str) -> InheritedFd {
        InheritedFd::new(fd, kind, target)
    }

    #[test]
    fn terminals_reopen_read_only_and_directories_close() {
        let fds = [
            fd(0, FdKind::Terminal, "/dev/pts/3"),
            fd(1, FdKind::Terminal, "/dev/pts/3"),
            fd(2, FdKind::Directory, "/home/u"),
            fd(3, FdKind::Directory, "/home/u"),
            fd(4, FdKind::Pipe, "pipe:[1]"),
            fd(5, FdKind::ConnectedSocket, "socket:[2]"),
            fd(6, FdKind::OtherSocket, "socket:[3]"),
            fd(7, FdKind::RegularFile, "/home/u/.bashrc"),
            fd(8, FdKind::Other, "anon_inode:[pidfd]"),
            fd(9, FdKind::CharDevice, "/dev/kvm"),
        ];
        let p = plan(&fds, &[9], false);
        assert_eq!(
            p.binds,
            vec![PathBuf::from("/dev/pts/3"), PathBuf::from("/dev/null")]
        );
        assert_eq!(
            p.reopen,
            vec![
                (0, PathBuf::from("/dev/pts/3")),
                (1, PathBuf::from("/dev/pts/3")),
                (2, PathBuf::from("/dev/null"))
            ]
        );
        assert_eq!(p.keep, vec![4, 5, 9]);
        assert_eq!(p.console, Some(PathBuf::from("/dev/pts/3")));
        assert_eq!(p.closed.iter().map(|c| c.0).collect::<Vec<_>>(), vec![3, 6, 7, 8]);
        assert!(p.closed[0].1.contains("directory /home/u"));
    }

    #[test]
    fn devices_without_a_path_the_caller_may_open_stay() {
        // Output written to them is not lost to /dev/null.
        let fds = [fd(0, FdKind::Terminal, ""), fd(1, FdKind::CharDevice, "")];
        let p = plan(&fds, &[], false);
        assert_eq!(p, FdPlan::default());
    }

    #[test]
    fn files_and_pipes_on_0_to_2_stay() {
        let fds = [
            fd(0, FdKind::Pipe, "pipe:[1]"),
            fd(1, FdKind::RegularFile, "/var/log/x"),
            fd(2, FdKind::ConnectedSocket, "socket:[2]"),
        ];
        assert_eq!(plan(&fds, &[], false), FdPlan::default());
    }

    #[test]
    fn without_landlock_files_that_stay_are_reopened_read_only() {
        let mut written = fd(1, FdKind::RegularFile, "/var/log/x");
        written.writable = true;
        let mut gone = fd(2, FdKind::RegularFile, "/tmp/sh-thd (deleted)");
        gone.unlinked = true;
        let fds = [
            fd(0, FdKind::RegularFile, "/home/u/.bashrc"),
            written,
            gone,
            fd(3, FdKind::Directory, "/home/u"),
            fd(4, FdKind::RegularFile, ""),
            fd(5, FdKind::RegularFile, "/etc/hosts"),
        ];
        let p = plan(&fds, &[3, 4], true);
        assert_eq!(
            p.binds,
            vec![PathBuf::from("/home/u/.bashrc"), PathBuf::from("/home/u")]
        );
        assert_eq!(
            p.reopen,
            vec![
                (0, PathBuf::from("/home/u/.bashrc")),
                (3, PathBuf::from("/home/u"))
            ]
        );
        assert_eq!(p.keep, vec![3]);
        assert_eq!(p.unsealable.len(), 1);
        assert!(p.unsealable[0].starts_with("fd 4"));
        // fd 5, not kept, is closed as always.
        assert_eq!(p.closed.iter().map(|c| c.0).collect::<Vec<_>>(), vec![5]);
    }
}
