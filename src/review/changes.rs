//! A layer's changes: each tree's upper directory walked beside the host's
//! tree as it is now, both through descriptors opened with O_NOFOLLOW
//! (never a link followed, on either side). overlayfs (mounted with
//! `userxattr`) records in the upper layer:
//!
//! - a new or changed file, directory, symlink or FIFO as itself (a file
//!   or directory copied up from the host carries `user.overlay.origin`);
//! - a removal as a whiteout, a character device 0/0;
//! - a directory whose host content is gone (removed, then made again) as
//!   an opaque one (`user.overlay.opaque` = `y`): below it nothing of the
//!   host's shows, so what the host has there and the layer not is removed.
//!
//! A file copied up but left as it was (same content and mode) is no
//! change. Redirects and metacopy, which would need interpreting, are off
//! with `userxattr`.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// What the host has at a path now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    pub kind: HostKind,
    pub mode: u32,
    pub size: u64,
    /// The last change of its inode (seconds, nanoseconds).
    pub ctime: (i64, i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    Missing,
    File,
    Dir,
    Symlink,
    Other,
}

impl Host {
    pub const MISSING: Host = Host {
        kind: HostKind::Missing,
        mode: 0,
        size: 0,
        ctime: (0, 0),
    };

    fn of(st: &rustix::fs::Stat) -> Host {
        let kind = match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => HostKind::File,
            FileType::Directory => HostKind::Dir,
            FileType::Symlink => HostKind::Symlink,
            _ => HostKind::Other,
        };
        Host {
            kind,
            mode: st.st_mode & 0o7777,
            size: st.st_size as u64,
            ctime: (st.st_ctime, st.st_ctime_nsec as i64),
        }
    }
}

/// One change the layer makes to a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A regular file made, or its content or mode changed
    /// (`same_content`: only its mode). `origin`: copied up from the host.
    File {
        mode: u32,
        size: u64,
        same_content: bool,
        origin: bool,
    },
    /// A directory made where the host has none (or something else), or
    /// whose mode changed. `opaque`: the host's content is gone from it.
    Dir {
        mode: u32,
        origin: bool,
        opaque: bool,
    },
    Symlink {
        target: OsString,
    },
    Fifo {
        mode: u32,
    },
    /// Removed: a whiteout, or what the host has under an opaque
    /// directory and the layer not.
    Deleted,
    /// A socket or a device node: not applied.
    Unsupported(&'static str),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub tree: usize,
    /// Relative to the tree.
    pub rel: PathBuf,
    pub kind: Kind,
    /// What the host has there now.
    pub host: Host,
}

pub(super) fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

pub(super) fn file_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC
}

/// The names in a directory, sorted (`.` and `..` left out).
pub(super) fn names(dir: BorrowedFd<'_>) -> Result<Vec<OsString>, Errno> {
    let mut v = Vec::new();
    for e in rustix::fs::Dir::read_from(dir)? {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            v.push(OsString::from_vec(n.to_vec()));
        }
    }
    v.sort();
    Ok(v)
}

/// What the host has at `name` in `dir` (Missing where `dir` is None).
pub(super) fn host_at(dir: Option<BorrowedFd<'_>>, name: &std::ffi::OsStr) -> Host {
    dir.and_then(|d| rustix::fs::statat(d, name, AtFlags::SYMLINK_NOFOLLOW).ok())
        .map_or(Host::MISSING, |st| Host::of(&st))
}

/// Whether an overlay xattr is set on an open file.
fn has_xattr(fd: BorrowedFd<'_>, name: &str, value: Option<&[u8]>) -> bool {
    let mut buf = [0u8; 8];
    match rustix::fs::fgetxattr(fd, name, &mut buf) {
        Ok(n) => value.is_none_or(|v| &buf[..n.min(buf.len())] == v),
        Err(Errno::RANGE) => value.is_none(),
        Err(_) => false,
    }
}

/// Every change of every tree of a layer, parents before children; an
/// error names what could not be read.
pub fn of_layer(layer: &super::Layer) -> Result<Vec<Change>, String> {
    let mut out = Vec::new();
    for (n, tree) in layer.info.trees.iter().enumerate() {
        let upper = layer.upper(n);
        let up = rustix::fs::open(&upper, dir_flags(), Mode::empty())
            .map_err(|e| format!("{}: {e}", upper.display()))?;
        let host = rustix::fs::open(tree, dir_flags(), Mode::empty()).ok();
        let mut w = Walk {
            tree: n,
            out: &mut out,
        };
        w.dir(up.as_fd(), host.as_ref().map(|h| h.as_fd()), Path::new(""), false)
            .map_err(|e| format!("{}: {e}", upper.display()))?;
    }
    Ok(out)
}

struct Walk<'a> {
    tree: usize,
    out: &'a mut Vec<Change>,
}

impl Walk<'_> {
    fn push(&mut self, rel: PathBuf, kind: Kind, host: Host) {
        // Host git reads through a link and waits on a FIFO in its own
        // dir, and trusts what it finds there: never applied there.
        let in_git_dir = self.tree > 0 || rel.components().any(|c| c.as_os_str() == ".git");
        let kind = match kind {
            Kind::Symlink { .. } | Kind::Fifo { .. } if in_git_dir => {
                Kind::Unsupported("a link or FIFO in a git dir, which host git would read through")
            }
            k => k,
        };
        self.out.push(Change {
            tree: self.tree,
            rel,
            kind,
            host,
        });
    }

    /// The upper directory `up` beside the host's `host` at `rel`; `opaque`:
    /// the host's content below is not part of the merged view.
    fn dir(
        &mut self,
        up: BorrowedFd<'_>,
        host: Option<BorrowedFd<'_>>,
        rel: &Path,
        opaque: bool,
    ) -> Result<(), Errno> {
        let upper_names = names(up)?;
        if opaque && let Some(h) = host {
            for n in names(h).unwrap_or_default() {
                if upper_names.binary_search(&n).is_err() {
                    let st = host_at(Some(h), &n);
                    self.push(rel.join(&n), Kind::Deleted, st);
                }
            }
        }
        for name in &upper_names {
            self.entry(up, host, rel, name, opaque)?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        up: BorrowedFd<'_>,
        host: Option<BorrowedFd<'_>>,
        rel: &Path,
        name: &std::ffi::OsStr,
        opaque: bool,
    ) -> Result<(), Errno> {
        let st = rustix::fs::statat(up, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let h = host_at(host, name);
        let path = rel.join(name);
        let mode = st.st_mode & 0o7777;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::CharacterDevice if st.st_rdev == 0 => {
                if h.kind != HostKind::Missing {
                    self.push(path, Kind::Deleted, h);
                }
            }
            FileType::Directory => {
                let sub = rustix::fs::openat(up, name, dir_flags(), Mode::empty())?;
                let own_opaque = has_xattr(sub.as_fd(), "user.overlay.opaque", Some(b"y"));
                let origin = has_xattr(sub.as_fd(), "user.overlay.origin", None);
                let host_dir = (h.kind == HostKind::Dir)
                    .then(|| host.and_then(|d| rustix::fs::openat(d, name, dir_flags(), Mode::empty()).ok()))
                    .flatten();
                let below_opaque = opaque || own_opaque;
                if host_dir.is_none() || own_opaque || h.mode != mode {
                    self.push(
                        path.clone(),
                        Kind::Dir {
                            mode,
                            origin,
                            opaque: below_opaque && host_dir.is_some(),
                        },
                        h,
                    );
                }
                self.dir(
                    sub.as_fd(),
                    host_dir.as_ref().map(OwnedFd::as_fd),
                    &path,
                    below_opaque,
                )?;
            }
            FileType::RegularFile => {
                let f = rustix::fs::openat(up, name, file_flags(), Mode::empty())?;
                let origin = has_xattr(f.as_fd(), "user.overlay.origin", None);
                let same_content = h.kind == HostKind::File
                    && h.size == st.st_size as u64
                    && host
                        .and_then(|d| rustix::fs::openat(d, name, file_flags(), Mode::empty()).ok())
                        .is_some_and(|hf| same_bytes(f.as_fd(), hf.as_fd()));
                if !(same_content && h.mode == mode) {
                    self.push(
                        path,
                        Kind::File {
                            mode,
                            size: st.st_size as u64,
                            same_content,
                            origin,
                        },
                        h,
                    );
                }
            }
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(up, name, Vec::new())?;
                let target = OsString::from_vec(target.into_bytes());
                let same = h.kind == HostKind::Symlink
                    && host
                        .and_then(|d| rustix::fs::readlinkat(d, name, Vec::new()).ok())
                        .is_some_and(|t| t.as_bytes() == target.as_bytes());
                if !same {
                    self.push(path, Kind::Symlink { target }, h);
                }
            }
            FileType::Fifo => {
                if h.kind != HostKind::Other || h.mode != mode {
                    self.push(path, Kind::Fifo { mode }, h);
                }
            }
            FileType::Socket => self.push(path, Kind::Unsupported("a socket"), h),
            _ => self.push(path, Kind::Unsupported("a device node"), h),
        }
        Ok(())
    }
}

/// Whether two open regular files hold the same bytes.
pub(super) fn same_bytes(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    let (mut x, mut y) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        let (Ok(n), Ok(m)) = (read_full(a, &mut x), read_full(b, &mut y)) else {
            return false;
        };
        if n != m || x[..n] != y[..m] {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
}

/// Reads until `buf` is full or the file ends.
pub(super) fn read_full(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut n = 0;
    while n < buf.len() {
        match rustix::io::read(fd, &mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A whole file, read through a descriptor (at most `limit` bytes; None
/// past it, or where it cannot be read).
pub(super) fn read_at(dir: BorrowedFd<'_>, name: &std::ffi::OsStr, limit: usize) -> Option<Vec<u8>> {
    let f = rustix::fs::openat(dir, name, file_flags(), Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&f).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_size as usize > limit {
        return None;
    }
    let mut buf = vec![0u8; st.st_size as usize];
    let n = read_full(f.as_fd(), &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// Where a change's path enters a git dir: the index of the component
/// after its last `.git` (0 in a git root outside the workspace, which is
/// one whole); None where it lies in no git dir.
pub(super) fn in_git_dir(c: &Change, parts: &[std::path::Component<'_>]) -> Option<usize> {
    let top = match parts
        .iter()
        .rposition(|p| *p == std::path::Component::Normal(".git".as_ref()))
    {
        Some(i) => i + 1,
        None if c.tree > 0 => 0,
        None => return None,
    };
    // A submodule's or a linked worktree's git dir within it is one of its
    // own, judged alike.
    let below: PathBuf = parts[top..].iter().collect();
    Some(top + crate::git_rules::names::innermost(&below).0.components().count())
}

/// Opens `rel`'s directories one by one beneath `root`, never following a
/// link; None where one is missing or not a directory.
pub(super) fn open_below(root: BorrowedFd<'_>, rel: &Path) -> Option<OwnedFd> {
    let mut fd = rustix::fs::openat(root, ".", dir_flags(), Mode::empty()).ok()?;
    for c in rel.components() {
        fd = rustix::fs::openat(&fd, c.as_os_str(), dir_flags(), Mode::empty()).ok()?;
    }
    Some(fd)
}

/// How many entries an upper directory holds that are not directories
/// (files, links, whiteouts): `qwrap review list`'s count.
pub fn count(upper: &Path) -> usize {
    fn walk(dir: BorrowedFd<'_>) -> usize {
        let mut n = 0;
        for name in names(dir).unwrap_or_default() {
            match rustix::fs::openat(dir, name.as_os_str(), dir_flags(), Mode::empty()) {
                Ok(sub) => n += walk(sub.as_fd()),
                Err(_) => n += 1,
            }
        }
        n
    }
    rustix::fs::open(upper, dir_flags(), Mode::empty()).map_or(0, |d| walk(d.as_fd()))
}
