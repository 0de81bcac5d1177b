//! Git pointer files that did not exist when the sandbox started
//! (`commondir`, `gitdir`, `config.worktree`, `objects/info/alternates`):
//! no mount can guard a name that does not exist, so the warden holds the
//! nearest existing directory of each open from before the command runs,
//! and when the command exits moves aside whatever was created in its
//! place (a file, a directory or a symlink on the way), so that a later
//! host `git` does not follow it. Nothing is deleted.

use crate::sys::kernel as k;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a moved file is renamed to: its name and this suffix.
pub const SUFFIX: &str = ".qwrap-quarantined";

/// One watched path: a directory held open (and its path, to report), the
/// rest of the path below it.
pub(super) struct Watched {
    dir: OwnedFd,
    dir_path: PathBuf,
    rest: Vec<OsString>,
}

/// Opens the nearest existing directory of each path.
pub(super) fn open(paths: &[PathBuf]) -> Vec<Watched> {
    paths.iter().filter_map(|p| open_one(p)).collect()
}

fn open_one(path: &Path) -> Option<Watched> {
    let mut rest = vec![path.file_name()?.to_os_string()];
    let mut dir = path.parent()?;
    loop {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match k::open(dir, flags, Mode::empty()) {
            Ok(fd) => {
                rest.reverse();
                return Some(Watched {
                    dir: fd,
                    dir_path: dir.to_path_buf(),
                    rest,
                });
            }
            // Only a missing directory is walked past: a symlink or file
            // already there is the user's own, never moved.
            Err(Errno::NOENT) => {
                rest.push(dir.file_name()?.to_os_string());
                dir = dir.parent()?;
            }
            Err(_) => return None,
        }
    }
}

/// The fds the warden must keep open.
pub(super) fn raw_fds(watched: &[Watched]) -> Vec<i32> {
    use rustix::fd::AsRawFd;
    watched.iter().map(|w| w.dir.as_raw_fd()).collect()
}

/// Moves aside what was created in a watched path's place; says so on
/// `report` when there is one.
pub(super) fn audit(watched: &[Watched], report: Option<&OwnedFd>) {
    for w in watched {
        if let Some((moved_from, moved_to)) = audit_one(w)
            && let Some(r) = report
        {
            let line = format!(
                "qwrap: {} was created inside the sandbox, where a host git would follow it: moved aside to {}\n",
                moved_from.display(),
                moved_to.display()
            );
            let _ = k::write(r, line.as_bytes());
        }
    }
}

/// Walks the rest of the path without following symlinks; the first part
/// that was created (the final name, or a non-directory on the way) is
/// renamed aside.
fn audit_one(w: &Watched) -> Option<(PathBuf, PathBuf)> {
    let mut held: Option<OwnedFd> = None;
    let mut parent_shown = w.dir_path.clone();
    for (i, name) in w.rest.iter().enumerate() {
        let dir: BorrowedFd = held.as_ref().map(|h| h.as_fd()).unwrap_or(w.dir.as_fd());
        let st = k::statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let last = i + 1 == w.rest.len();
        let is_dir = rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory;
        if last || !is_dir {
            let to = move_aside(dir, name).ok()?;
            return Some((parent_shown.join(name), parent_shown.join(to)));
        }
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        held = Some(k::openat(dir, name.as_os_str(), flags, Mode::empty()).ok()?);
        parent_shown.push(name);
    }
    None
}

fn move_aside(dir: BorrowedFd, name: &OsString) -> Result<OsString, Errno> {
    for n in 0..100 {
        let mut to = name.clone();
        to.push(SUFFIX);
        if n > 0 {
            to.push(format!(".{n}"));
        }
        match k::renameat_noreplace(dir, name.as_os_str(), to.as_os_str()) {
            Ok(()) => return Ok(to),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Errno::EXIST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_aside_what_appeared_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let git = d.path().join(".git");
        std::fs::create_dir_all(git.join("objects")).unwrap();
        std::fs::write(git.join("config"), "x").unwrap();
        let watched = open(&[
            git.join("commondir"),
            git.join("objects/info/alternates"),
            git.join("gitdir"),
        ]);
        assert_eq!(watched.len(), 3);
        assert_eq!(watched[1].rest, ["info", "alternates"].map(OsString::from));
        // Planted: a commondir file, and objects/info as a symlink.
        std::fs::write(git.join("commondir"), "/evil").unwrap();
        std::os::unix::fs::symlink("/tmp", git.join("objects/info")).unwrap();
        audit(&watched, None);
        assert!(!git.join("commondir").exists());
        assert_eq!(
            std::fs::read_to_string(git.join("commondir.qwrap-quarantined")).unwrap(),
            "/evil"
        );
        assert!(std::fs::symlink_metadata(git.join("objects/info")).is_err());
        assert!(std::fs::symlink_metadata(git.join("objects/info.qwrap-quarantined")).is_ok());
        assert!(!git.join("gitdir.qwrap-quarantined").exists());
        assert_eq!(std::fs::read_to_string(git.join("config")).unwrap(), "x");
        // A second planting does not overwrite the first one moved aside.
        std::fs::write(git.join("commondir"), "/evil2").unwrap();
        audit(&watched, None);
        assert_eq!(
            std::fs::read_to_string(git.join("commondir.qwrap-quarantined.1")).unwrap(),
            "/evil2"
        );
    }

    #[test]
    fn the_report_names_the_path() {
        let d = tempfile::tempdir().unwrap();
        let watched = open(&[d.path().join("commondir")]);
        std::fs::write(d.path().join("commondir"), "x").unwrap();
        let (from, to) = audit_one(&watched[0]).unwrap();
        assert_eq!(from, d.path().join("commondir"));
        assert_eq!(to, d.path().join("commondir.qwrap-quarantined"));
    }
}
