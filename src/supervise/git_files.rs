//! The git guard's file primitives, relative to descriptors the warden
//! holds: a name's state (regular files and directories only, read with
//! O_NOFOLLOW|O_NONBLOCK), a write under git's lock (`NAME.lock` created
//! exclusively, then renamed into place), a removal, the first copy in.

use crate::sys::kernel as k;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Files up to this size are held in memory; larger ones are hashed and
/// copied through a fixed buffer from the descriptor read.
const SMALL: u64 = 1 << 20;
/// The largest file vetted (read whole): refs, reflogs, the index.
pub(super) const VET_MAX: u64 = 256 << 20;

/// A file's content: held, or (large) read again from its descriptor.
#[derive(Debug, Clone)]
pub(super) enum Data {
    Small(Vec<u8>),
    /// The descriptor and the length hashed: exactly that much is copied
    /// (a file still growing is copied again once it changes).
    Large(std::sync::Arc<OwnedFd>, u64),
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        match (self, other) {
            (Data::Small(a), Data::Small(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Data {}

impl Data {
    /// The whole content, read into memory up to `max` bytes.
    pub(super) fn bytes(&self, max: u64) -> Result<std::borrow::Cow<'_, [u8]>, String> {
        match self {
            Data::Small(d) => Ok(std::borrow::Cow::Borrowed(d)),
            Data::Large(fd, len) => {
                if *len > max {
                    return Err(format!("it is larger than the {} MiB qwrap vets", max >> 20));
                }
                let mut v = Vec::new();
                let mut at = 0u64;
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let want = buf.len().min((len - at) as usize);
                    match k::pread(&**fd, &mut buf[..want], at) {
                        Ok(0) => return Ok(std::borrow::Cow::Owned(v)),
                        Ok(n) => {
                            v.extend_from_slice(&buf[..n]);
                            at += n as u64;
                        }
                        Err(Errno::INTR) => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
            }
        }
    }

    /// Writes the content to `to`, through a fixed buffer when large, its
    /// holes left holes (a file of holes inside stays one on the host's
    /// disk, not gigabytes of zeros).
    fn write_to(&self, to: &OwnedFd) -> Result<(), Errno> {
        match self {
            Data::Small(d) => crate::sys::write_all(to, d),
            Data::Large(fd, len) => {
                let mut buf = vec![0u8; 64 * 1024];
                let mut at = 0u64;
                while at < *len {
                    // The next stretch of data, and where it ends.
                    let start = match k::seek_data(&**fd, at, false) {
                        Ok(s) => s.min(*len),
                        Err(Errno::NXIO) => *len,
                        Err(_) => at,
                    };
                    let end = k::seek_data(&**fd, start, true).map_or(*len, |e| e.min(*len));
                    at = start;
                    while at < end {
                        let want = buf.len().min((end - at) as usize);
                        match k::pread(&**fd, &mut buf[..want], at) {
                            Ok(0) => return k::ftruncate(to, at),
                            Ok(n) => {
                                pwrite_all(to, &buf[..n], at)?;
                                at += n as u64;
                            }
                            Err(Errno::INTR) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                k::ftruncate(to, *len)
            }
        }
    }
}

/// Writes all of `data` at `offset`.
fn pwrite_all(to: &OwnedFd, mut data: &[u8], mut offset: u64) -> Result<(), Errno> {
    while !data.is_empty() {
        match k::pwrite(to, data, offset) {
            Ok(n) => {
                data = &data[n..];
                offset += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One side's view of a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    Absent,
    File {
        hash: u64,
        data: Data,
        mode: u32,
    },
    Dir,
    /// A link, FIFO, socket or device: never copied.
    Other,
}

pub(super) fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The directory `rel` below `root`, walked without following a link.
pub(super) fn open_dir(root: BorrowedFd<'_>, rel: &Path) -> Result<OwnedFd, Errno> {
    let mut fd = k::openat(root, ".", dir_flags(), Mode::empty())?;
    for c in rel.iter() {
        fd = k::openat(&fd, c, dir_flags(), Mode::empty())?;
    }
    Ok(fd)
}

/// The names in a directory (none when it cannot be opened).
pub(super) fn names(root: BorrowedFd<'_>, rel: &Path) -> Vec<OsString> {
    match open_dir(root, rel) {
        Ok(fd) => names_in(fd.as_fd()),
        Err(_) => Vec::new(),
    }
}

/// The names in a directory held.
pub(super) fn names_in(fd: BorrowedFd<'_>) -> Vec<OsString> {
    k::dir_entries(fd, usize::MAX)
        .map(|entries| entries.into_iter().map(|(name, _)| name).collect())
        .unwrap_or_default()
}

pub(super) fn state(root: BorrowedFd<'_>, rel: &Path) -> State {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return State::Absent;
    };
    let Ok(dir) = open_dir(root, parent) else {
        return State::Absent;
    };
    let st = match k::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(_) => return State::Absent,
    };
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::Directory => State::Dir,
        rustix::fs::FileType::RegularFile => {
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            let Ok(fd) = k::openat(&dir, name, flags, Mode::empty()) else {
                return State::Absent;
            };
            // The file opened is the one checked: a swap in between shows here.
            match k::fstat(&fd) {
                Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => {}
                _ => return State::Other,
            }
            // Hashed as a stream; held only while it stays small (a file
            // still growing is not held past SMALL either).
            let mut len = 0u64;
            let mut data = Vec::new();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match k::read(&fd, &mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        std::hash::Hasher::write(&mut h, &buf[..n]);
                        len += n as u64;
                        if len <= SMALL {
                            data.extend_from_slice(&buf[..n]);
                        } else {
                            data = Vec::new();
                        }
                    }
                    Err(Errno::INTR) => {}
                    Err(_) => return State::Other,
                }
            }
            let hash = std::hash::Hasher::finish(&h);
            let data = if len > SMALL {
                Data::Large(std::sync::Arc::new(fd), len)
            } else {
                Data::Small(data)
            };
            State::File {
                hash,
                data,
                mode: st.st_mode & 0o777,
            }
        }
        _ => State::Other,
    }
}

/// The last `max` bytes of the regular file at `rel` (from a line's
/// start where cut), read without the rest: a long reflog costs no more.
pub(super) fn tail_of(root: BorrowedFd<'_>, rel: &Path, max: u64) -> Option<Vec<u8>> {
    let dir = open_dir(root, rel.parent()?).ok()?;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = k::openat(&dir, rel.file_name()?, flags, Mode::empty()).ok()?;
    let st = k::fstat(&fd).ok()?;
    if !rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() {
        return None;
    }
    let len = st.st_size as u64;
    let start = len.saturating_sub(max);
    let mut v = vec![0u8; (len - start) as usize];
    let mut at = 0usize;
    while at < v.len() {
        match k::pread(&fd, &mut v[at..], start + at as u64) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    v.truncate(at);
    Some(crate::policy::whole_lines(v, start > 0))
}

/// The bytes' hash, as the large files' is made a buffer at a time (the
/// hasher takes a stream: however a file is read, its hash is the same).
pub(super) fn hash(data: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(data);
    h.finish()
}

/// Creates the missing directories of `rel` below `root` (never through a
/// link) and returns the last.
pub(super) fn make_dirs(root: BorrowedFd<'_>, rel: &Path) -> Result<OwnedFd, Errno> {
    let mut fd = k::openat(root, ".", dir_flags(), Mode::empty())?;
    for c in rel.iter() {
        match k::mkdirat(&fd, c, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e),
        }
        fd = k::openat(&fd, c, dir_flags(), Mode::empty())?;
    }
    Ok(fd)
}

/// The directory `name` in `dir`, made if missing (never through a link).
pub(super) fn make_dir_at(dir: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    match k::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e),
    }
    k::openat(dir, name, dir_flags(), Mode::empty())
}

pub(super) fn lock_name(name: &OsStr) -> OsString {
    let mut l = name.to_os_string();
    l.push(".lock");
    l
}

/// Writes `data` at `rel` the way git does: `NAME.lock` created exclusively
/// (AGAIN while another holds it), written, renamed into place.
pub(super) fn put(root: BorrowedFd<'_>, rel: &Path, data: &[u8], mode: u32) -> Result<(), Errno> {
    put_data(root, rel, &Data::Small(data.to_vec()), mode)
}

/// [`put`] of a file's content, held or streamed.
pub(super) fn put_data(root: BorrowedFd<'_>, rel: &Path, data: &Data, mode: u32) -> Result<(), Errno> {
    let dir = make_dirs(root, rel.parent().unwrap_or(Path::new("")))?;
    let name = rel.file_name().ok_or(Errno::INVAL)?;
    let lock = lock_name(name);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match k::openat(&dir, lock.as_os_str(), flags, Mode::from_raw_mode(mode)) {
        Err(Errno::EXIST) => return Err(Errno::AGAIN),
        r => r?,
    };
    if let Err(e) = data.write_to(&fd) {
        let _ = k::unlinkat(&dir, lock.as_os_str(), AtFlags::empty());
        return Err(e);
    }
    let _ = k::fchmod(&fd, Mode::from_raw_mode(mode));
    k::renameat(&dir, lock.as_os_str(), name)
}

/// Removes the file at `rel` under its lock, or the directory at `rel` with
/// everything in it (never through a link).
pub(super) fn remove(root: BorrowedFd<'_>, rel: &Path, is_dir: bool) -> Result<(), Errno> {
    let dir = open_dir(root, rel.parent().unwrap_or(Path::new("")))?;
    let name = rel.file_name().ok_or(Errno::INVAL)?;
    if is_dir {
        if let Ok(sub) = k::openat(&dir, name, dir_flags(), Mode::empty()) {
            for n in names(sub.as_fd(), Path::new("")) {
                let d = k::statat(&sub, n.as_os_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
                    rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
                });
                let _ = remove(sub.as_fd(), Path::new(&n), d);
            }
        }
        return k::unlinkat(&dir, name, AtFlags::REMOVEDIR);
    }
    let lock = lock_name(name);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match k::openat(&dir, lock.as_os_str(), flags, Mode::from_raw_mode(0o600)) {
        Err(Errno::EXIST) => return Err(Errno::AGAIN),
        r => drop(r?),
    }
    let r = k::unlinkat(&dir, name, AtFlags::empty());
    let _ = k::unlinkat(&dir, lock.as_os_str(), AtFlags::empty());
    r
}

/// Copies a host file or directory (regular files and directories, any
/// depth up to 8) into the sandbox's own side, once.
pub(super) fn copy_in(host: BorrowedFd<'_>, own: BorrowedFd<'_>, rel: &Path, depth: usize) {
    match state(host, rel) {
        State::File { data, mode, .. } => {
            let _ = put_data(own, rel, &data, mode);
        }
        State::Dir if depth < 8 => {
            let _ = make_dirs(own, rel);
            for n in names(host, rel) {
                // git never runs the sample hooks: not worth a copy each.
                if rel == Path::new("hooks") && n.as_bytes().ends_with(b".sample") {
                    continue;
                }
                copy_in(host, own, &rel.join(n), depth + 1);
            }
        }
        _ => {}
    }
}

/// What [`seed_file`] found and copied.
pub(super) enum Seeded {
    /// A regular file, copied: its hash as [`state`] computes it.
    File(u64),
    /// A directory, opened (O_NOFOLLOW|O_DIRECTORY, read-only).
    Dir(OwnedFd),
}

/// Copies one regular file `name` of up to 1 MiB from `host` to `own`
/// (both directories held), made exclusively: the start's copy, before
/// anyone else writes there. A directory is only reported; anything else,
/// or a larger file (left to the first reconcile), is skipped.
pub(super) fn seed_file(host: BorrowedFd<'_>, own: BorrowedFd<'_>, name: &OsStr) -> Option<Seeded> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = k::openat(host, name, flags, Mode::empty()).ok()?;
    let st = k::fstat(&fd).ok()?;
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::Directory => return Some(Seeded::Dir(fd)),
        rustix::fs::FileType::RegularFile if st.st_size as u64 <= SMALL => {}
        _ => return None,
    }
    let mut data = Vec::with_capacity(st.st_size as usize);
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match k::read(&fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    let mode = Mode::from_raw_mode(st.st_mode & 0o777);
    let wflags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let out = k::openat(own, name, wflags, mode).ok()?;
    let h = hash(&data);
    Data::Small(data).write_to(&out).ok()?;
    Some(Seeded::File(h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fake;

    fn root() -> (tempfile::TempDir, OwnedFd) {
        let d = tempfile::tempdir().unwrap();
        let fd = rustix::fs::open(d.path(), dir_flags(), Mode::empty()).unwrap();
        (d, fd)
    }

    #[test]
    fn a_tail_starts_at_a_line_and_a_link_has_none() {
        let (d, fd) = root();
        std::fs::create_dir(d.path().join("logs")).unwrap();
        std::fs::write(d.path().join("logs/HEAD"), "one\ntwo\nthree\n").unwrap();
        let tail = |max| tail_of(fd.as_fd(), Path::new("logs/HEAD"), max);
        assert_eq!(tail(100).unwrap(), b"one\ntwo\nthree\n");
        assert_eq!(tail(8).unwrap(), b"three\n", "a line cut is not read");
        std::os::unix::fs::symlink("HEAD", d.path().join("logs/link")).unwrap();
        assert_eq!(tail_of(fd.as_fd(), Path::new("logs/link"), 100), None);
    }

    #[test]
    fn a_write_takes_git_s_lock_then_renames_into_place() {
        let (_d, fd) = root();
        fake::start();
        let r = put(fd.as_fd(), Path::new("refs/heads/main"), b"0123\n", 0o644);
        let calls: Vec<String> = fake::take_calls()
            .into_iter()
            .map(|c| format!("{} {}", c.name, c.args))
            .collect();
        fake::stop();
        assert_eq!(r, Ok(()));
        assert_eq!(
            calls,
            [
                "openat dirfd, \".\", OFlags(DIRECTORY | NOFOLLOW | CLOEXEC)",
                "mkdirat dirfd, \"refs\", 0o755",
                "openat dirfd, \"refs\", OFlags(DIRECTORY | NOFOLLOW | CLOEXEC)",
                "mkdirat dirfd, \"heads\", 0o755",
                "openat dirfd, \"heads\", OFlags(DIRECTORY | NOFOLLOW | CLOEXEC)",
                "openat dirfd, \"main.lock\", OFlags(CREATE | EXCL | NOFOLLOW | WRONLY | CLOEXEC)",
                "write fd, \"0123\\n\"",
                "fchmod ",
                "renameat dirfd, \"main.lock\", dirfd, \"main\"",
            ]
        );
    }

    #[test]
    fn a_lock_held_defers_the_write_and_leaves_the_file() {
        let (d, fd) = root();
        std::fs::write(d.path().join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(d.path().join("HEAD.lock"), "").unwrap();
        assert_eq!(
            put(fd.as_fd(), Path::new("HEAD"), b"x\n", 0o644),
            Err(Errno::AGAIN)
        );
        assert_eq!(remove(fd.as_fd(), Path::new("HEAD"), false), Err(Errno::AGAIN));
        assert_eq!(
            std::fs::read(d.path().join("HEAD")).unwrap(),
            b"ref: refs/heads/main\n"
        );
        std::fs::remove_file(d.path().join("HEAD.lock")).unwrap();
        assert_eq!(put(fd.as_fd(), Path::new("HEAD"), b"x\n", 0o600), Ok(()));
        assert_eq!(std::fs::read(d.path().join("HEAD")).unwrap(), b"x\n");
        assert!(!d.path().join("HEAD.lock").exists());
    }

    #[test]
    fn links_fifos_and_devices_are_never_read_and_never_block() {
        let (d, fd) = root();
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("link")).unwrap();
        rustix::fs::mknodat(
            &fd,
            "fifo",
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        std::os::unix::fs::symlink(d.path().join("dir"), d.path().join("dirlink")).unwrap();
        std::fs::write(d.path().join("dir/f"), "y").unwrap();
        assert!(matches!(state(fd.as_fd(), Path::new("link")), State::Other));
        assert!(matches!(state(fd.as_fd(), Path::new("fifo")), State::Other));
        assert!(matches!(state(fd.as_fd(), Path::new("dir")), State::Dir));
        assert!(
            matches!(state(fd.as_fd(), Path::new("dirlink/f")), State::Absent),
            "a link on the way is not followed"
        );
        match state(fd.as_fd(), Path::new("dir/f")) {
            State::File { data, .. } => assert_eq!(data, Data::Small(b"y".to_vec())),
            _ => panic!("a regular file"),
        }
    }

    #[test]
    fn a_write_through_a_link_on_the_way_is_refused() {
        let (d, fd) = root();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join("logs")).unwrap();
        assert!(put(fd.as_fd(), Path::new("logs/HEAD"), b"x\n", 0o644).is_err());
        assert!(!elsewhere.path().join("HEAD").exists());
        assert!(!elsewhere.path().join("HEAD.lock").exists());
    }
}
