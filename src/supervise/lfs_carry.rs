//! git-lfs's objects made inside, carried to the host's store as git-lfs
//! takes a download: the sandbox's store is its own (a level of the git
//! dir's tmpfs), and only `objects/XX/YY/OID`, a regular file whose
//! SHA-256 is its name, is copied out: hashed first, without a byte
//! written on the host (a false object had become gigabytes of the host's
//! disk before it was refused), then copied in a fixed buffer, hashed
//! again as it is copied (the file may change between), into a new file
//! beside its place, renamed there replacing nothing. A file with holes
//! stays inside (git-lfs writes none, and holes would become data on the
//! host), and so does a link, a FIFO or anything else made there.

use super::git_files::{dir_flags, names_in, open_dir};
use crate::git_rules::sha256::{Sha256, hex};
use crate::sys::kernel as k;
use crate::sys::write_all;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What one pass did: each object and whether the host took it.
pub(super) type Carried = Vec<(PathBuf, Result<(), String>)>;

/// Copies what is new in the sandbox's `lfs/objects` (below `own_top`) to
/// the host's store `host_store`; `done` names what was looked at.
pub(super) fn carry(own_top: BorrowedFd<'_>, host_store: &Path, done: &mut HashSet<OsString>) -> Carried {
    let mut out = Vec::new();
    let Ok(objects) = open_dir(own_top, Path::new("lfs/objects")) else {
        return out;
    };
    for xx in names_in(objects.as_fd()).into_iter().filter(|n| hex_of(n, 2)) {
        let Ok(x) = open_dir(objects.as_fd(), Path::new(&xx)) else {
            continue;
        };
        for yy in names_in(x.as_fd()).into_iter().filter(|n| hex_of(n, 2)) {
            let Ok(y) = open_dir(x.as_fd(), Path::new(&yy)) else {
                continue;
            };
            for oid in names_in(y.as_fd()) {
                let b = oid.as_bytes();
                if !hex_of(&oid, 64)
                    || b[..2] != *xx.as_bytes()
                    || b[2..4] != *yy.as_bytes()
                    || done.contains(&oid)
                {
                    continue;
                }
                done.insert(oid.clone());
                let rel = Path::new("objects").join(&xx).join(&yy).join(&oid);
                if let Some(r) = one(y.as_fd(), host_store, &xx, &yy, &oid) {
                    out.push((rel, r));
                }
            }
        }
    }
    out
}

/// One object: None when the host has it already or it is no file.
fn one(
    own: BorrowedFd<'_>,
    host_store: &Path,
    xx: &OsStr,
    yy: &OsStr,
    oid: &OsStr,
) -> Option<Result<(), String>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let src = k::openat(own, oid, flags, Mode::empty()).ok()?;
    let st = k::fstat(&src).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return None;
    }
    // Blocks are 512 bytes; a page's worth of slack for the last one.
    if (st.st_blocks as u64) * 512 + 4096 < st.st_size as u64 {
        return Some(Err("a file with holes (git-lfs writes none): not carried".into()));
    }
    let dir = match host_dir(host_store, &[OsStr::new("objects"), xx, yy]) {
        Ok(d) => d,
        Err(e) => return Some(Err(format!("the host's store: {e}"))),
    };
    if k::statat(&dir, oid, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        return None;
    }
    Some(copy_checked(&src, &dir, oid, st.st_size as u64))
}

/// Hands `each` the file's first `len` bytes in turn, read by offset into
/// one fixed buffer (the file may grow meanwhile: what is past `len` is
/// never read).
fn each_piece(
    src: &OwnedFd,
    len: u64,
    mut each: impl FnMut(&[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = 0u64;
    while at < len {
        let most = buf.len().min(usize::try_from(len - at).unwrap_or(usize::MAX));
        match k::pread(src, &mut buf[..most], at) {
            Ok(0) => break,
            Ok(n) => {
                each(&buf[..n])?;
                at += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// Whether the file's first `len` bytes hash to `oid`.
fn hashes_to(src: &OwnedFd, oid: &OsStr, len: u64) -> Result<bool, String> {
    let mut hash = Sha256::default();
    each_piece(src, len, |piece| {
        hash.update(piece);
        Ok(())
    })?;
    Ok(hex(&hash.finish()).as_bytes() == oid.as_bytes())
}

/// The copy of the file's first `len` bytes (its length when opened: one
/// grown meanwhile, holes and all, had become gigabytes of the host's
/// disk), once they hash to `oid`, hashed again as they are written, kept
/// only if they still do.
fn copy_checked(src: &OwnedFd, dir: &OwnedFd, oid: &OsStr, len: u64) -> Result<(), String> {
    if !hashes_to(src, oid, len)? {
        return Err("its content does not hash to its name".into());
    }
    let mut tmp_name = OsString::from(".qwrap-");
    tmp_name.push(oid);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let tmp = k::openat(dir, &tmp_name, flags, Mode::from_raw_mode(0o644)).map_err(|e| e.to_string())?;
    let mut hash = Sha256::default();
    let written = each_piece(src, len, |piece| {
        hash.update(piece);
        write_all(&tmp, piece).map_err(|e| e.to_string())
    });
    let result = written.and_then(|()| {
        if hex(&hash.finish()).as_bytes() == oid.as_bytes() {
            k::renameat_noreplace(dir, &tmp_name, oid).map_err(|e| e.to_string())
        } else {
            Err("its content does not hash to its name".into())
        }
    });
    if result.is_err() {
        let _ = k::unlinkat(dir, &tmp_name, AtFlags::empty());
    }
    result
}

/// A directory below the host's store, made where missing, each level
/// opened without following a link.
fn host_dir(store: &Path, levels: &[&OsStr]) -> Result<OwnedFd, Errno> {
    let mut fd = k::open(store, dir_flags(), Mode::empty())?;
    for l in levels {
        match k::mkdirat(&fd, *l, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e),
        }
        fd = k::openat(&fd, *l, dir_flags(), Mode::empty())?;
    }
    Ok(fd)
}

/// A name of `n` lowercase hex digits.
fn hex_of(name: &OsStr, n: usize) -> bool {
    let b = name.as_bytes();
    b.len() == n && b.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_file_that_hashes_to_its_name_reaches_the_host() {
        let t = std::env::temp_dir().join(format!("qwrap-lfs-carry-{}", std::process::id()));
        let own = t.join("own");
        let host = t.join("host/lfs");
        std::fs::create_dir_all(&host).unwrap();
        let good = hex(&{
            let mut s = Sha256::default();
            s.update(b"content\n");
            s.finish()
        });
        let bad = "ab".repeat(32);
        for (oid, body) in [(&good, "content\n"), (&bad, "other\n")] {
            let d = own.join("lfs/objects").join(&oid[..2]).join(&oid[2..4]);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(oid), body).unwrap();
        }
        let linked = "cd".repeat(32);
        let d = own.join("lfs/objects/cd/cd");
        std::fs::create_dir_all(&d).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.join(&linked)).unwrap();
        let top = rustix::fs::open(&own, dir_flags(), Mode::empty()).unwrap();
        let mut done = HashSet::new();
        let out = carry(top.as_fd(), &host, &mut done);
        let obj = |oid: &str| host.join("objects").join(&oid[..2]).join(&oid[2..4]).join(oid);
        assert_eq!(std::fs::read(obj(&good)).unwrap(), b"content\n");
        assert!(std::fs::symlink_metadata(obj(&bad)).is_err());
        assert!(std::fs::symlink_metadata(obj(&linked)).is_err());
        assert!(
            out.iter().any(|(p, r)| p.ends_with(&bad) && r.is_err()),
            "{out:?}"
        );
        // Looked at once: a second pass does nothing.
        assert!(carry(top.as_fd(), &host, &mut done).is_empty());
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// An object that grows after it was first looked at is copied as
    /// long as it was then: what it grew by never reaches the host.
    #[test]
    fn only_the_length_first_seen_is_copied() {
        let t = std::env::temp_dir().join(format!("qwrap-lfs-grown-{}", std::process::id()));
        let host = t.join("host");
        std::fs::create_dir_all(&host).unwrap();
        let oid = hex(&{
            let mut s = Sha256::default();
            s.update(b"content\n");
            s.finish()
        });
        let src_path = t.join("src");
        std::fs::write(&src_path, "content\n").unwrap();
        let src = rustix::fs::open(&src_path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        // Grown by a gigabyte of holes once opened.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&src_path)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let dir = rustix::fs::open(&host, dir_flags(), Mode::empty()).unwrap();
        copy_checked(&src, &dir, OsStr::new(&oid), 8).unwrap();
        assert_eq!(std::fs::metadata(host.join(&oid)).unwrap().len(), 8);
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// A false object is refused before anything is written beside its
    /// place (where the copy would go, a directory stands in the way: a
    /// write would fail on it first), and a file of holes at once.
    #[test]
    fn a_false_object_or_one_of_holes_writes_nothing_on_the_host() {
        let t = std::env::temp_dir().join(format!("qwrap-lfs-false-{}", std::process::id()));
        let own = t.join("own");
        let host = t.join("host/lfs");
        let (bad, holes) = ("ab".repeat(32), "ef".repeat(32));
        for (oid, len) in [(&bad, 0u64), (&holes, 1 << 30)] {
            let d = own.join("lfs/objects").join(&oid[..2]).join(&oid[2..4]);
            std::fs::create_dir_all(&d).unwrap();
            let f = std::fs::File::create(d.join(oid)).unwrap();
            if len == 0 {
                std::fs::write(d.join(oid), "false\n").unwrap();
            } else {
                f.set_len(len).unwrap();
            }
            let place = host.join("objects").join(&oid[..2]).join(&oid[2..4]);
            std::fs::create_dir_all(place.join(format!(".qwrap-{oid}.{}.tmp", std::process::id()))).unwrap();
        }
        let top = rustix::fs::open(&own, dir_flags(), Mode::empty()).unwrap();
        let out = carry(top.as_fd(), &host, &mut HashSet::new());
        let said = |oid: &str| {
            out.iter()
                .find(|(p, _)| p.ends_with(oid))
                .map(|(_, r)| r.clone().unwrap_err())
                .unwrap_or_default()
        };
        assert!(said(&bad).contains("does not hash"), "{out:?}");
        assert!(said(&holes).contains("holes"), "{out:?}");
        std::fs::remove_dir_all(&t).unwrap();
    }

    /// One object's decisions, answered by the recording fake.
    mod through_the_seam {
        use super::super::one;
        use crate::sys::fake::{self, Scripted};
        use std::ffi::OsStr;
        use std::path::Path;

        const OID: &str = "a3f0000000000000000000000000000000000000000000000000000000000000";

        fn carried() -> (Option<Result<(), String>>, Vec<String>) {
            let src = fake::fd();
            let r = one(
                std::os::fd::AsFd::as_fd(&src),
                Path::new("/host/lfs"),
                OsStr::new("a3"),
                OsStr::new("f0"),
                OsStr::new(OID),
            );
            (r, fake::finish())
        }

        fn wrote_on_host(c: &[String]) -> bool {
            c.iter()
                .any(|c| c.starts_with("mkdirat") || c.contains("CREATE") || c.starts_with("renameat2"))
        }

        #[test]
        fn a_link_fifo_or_other_non_file_is_left_alone() {
            fake::start();
            fake::script(Scripted::Mode(0o10644));
            let (r, c) = carried();
            assert!(r.is_none(), "{c:?}");
            assert_eq!(c.len(), 2, "its open and fstat alone: {c:?}");
        }

        #[test]
        fn a_file_of_holes_makes_nothing_on_the_host() {
            fake::start();
            fake::script(Scripted::Stat {
                mode: 0o100644,
                size: 1 << 30,
                blocks: 8,
            });
            let (r, c) = carried();
            assert!(matches!(r, Some(Err(ref e)) if e.contains("holes")), "{r:?}");
            assert!(!wrote_on_host(&c), "{c:?}");
        }

        #[test]
        fn an_object_the_host_has_is_not_written_again() {
            fake::start();
            fake::script(Scripted::Stat {
                mode: 0o100644,
                size: 10,
                blocks: 8,
            });
            let (r, c) = carried();
            assert!(r.is_none(), "{c:?}");
            assert!(c.last().unwrap().starts_with("newfstatat"), "{c:?}");
            assert!(
                !c.iter()
                    .any(|c| c.contains("CREATE") || c.starts_with("renameat2")),
                "{c:?}"
            );
        }

        #[test]
        fn content_that_does_not_hash_to_its_name_is_never_created_there() {
            fake::start();
            fake::script(Scripted::Stat {
                mode: 0o100644,
                size: 5,
                blocks: 8,
            });
            fake::fail_next("newfstatat", rustix::io::Errno::NOENT);
            fake::script(Scripted::Read(b"false".to_vec()));
            let (r, c) = carried();
            assert!(
                matches!(r, Some(Err(ref e)) if e.contains("does not hash")),
                "{r:?}"
            );
            assert!(
                !c.iter()
                    .any(|c| c.contains("CREATE") || c.starts_with("renameat2")),
                "{c:?}"
            );
            assert!(c.iter().any(|c| c.starts_with("pread64")), "it was read: {c:?}");
        }
    }
}
