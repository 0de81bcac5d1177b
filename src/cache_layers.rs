//! `qwrap cache`: the workspaces' cache layers (what sandboxes wrote to
//! overlaid caches), listed and removed. A layer slot a running sandbox
//! holds is never removed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What `qwrap cache` was asked.
pub enum Request {
    List,
    Clean { workspace: Option<PathBuf>, all: bool },
}

/// Where the layer sets are kept: the state directory's `caches`.
pub fn base(home: Option<&Path>, state_home: Option<std::ffi::OsString>) -> Option<PathBuf> {
    crate::policy::state_dir(home, state_home).map(|s| s.join("caches"))
}

/// One line per layer set: its name, slots and size.
pub fn list(base: &Path) -> String {
    let mut o = String::new();
    let mut sets: Vec<PathBuf> = std::fs::read_dir(base)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    sets.sort();
    if sets.is_empty() {
        let _ = writeln!(o, "no cache layers in {}", base.display());
    }
    for set in sets {
        let name = set.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let busy = (0..crate::host::caches::SLOTS)
            .filter(|n| held(&set.join(format!("{n}.lock"))))
            .count();
        let bytes = size(&set);
        let _ = writeln!(
            o,
            "{name}  {}{}",
            if bytes < 1 << 20 {
                format!("{} KiB", bytes.div_ceil(1024))
            } else {
                format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
            },
            if busy > 0 {
                format!("  ({busy} in use)")
            } else {
                String::new()
            }
        );
    }
    o
}

/// Removes the layer sets named (each slot not in use), returning what was
/// said about each, and whether one could not be removed.
pub fn clean(sets: &[PathBuf]) -> (Vec<String>, bool) {
    let (mut said, mut failed) = (Vec::new(), false);
    for set in sets {
        if !set.is_dir() {
            said.push(format!("{}: no layers", set.display()));
            continue;
        }
        let (s, f) = clean_slots(set, 0..crate::host::caches::SLOTS);
        said.extend(s);
        failed |= f;
    }
    (said, failed)
}

/// The slots of `set` that are not there now: a report command's probe
/// sandbox makes them, and `clean_slots` takes them away after it.
pub fn missing_slots(set: &Path) -> Vec<usize> {
    (0..crate::host::caches::SLOTS)
        .filter(|n| !set.join(n.to_string()).exists())
        .collect()
}

/// Removes the slots of `set` named (each not in use), and the set once
/// it is empty, returning what was said about each, and whether one could
/// not be removed.
pub fn clean_slots(set: &Path, slots: impl IntoIterator<Item = usize>) -> (Vec<String>, bool) {
    let (mut said, mut failed) = (Vec::new(), false);
    for n in slots {
        let slot = set.join(n.to_string());
        let lock = set.join(format!("{n}.lock"));
        if !slot.exists() {
            continue;
        }
        if held(&lock) {
            said.push(format!("{}: in use by a running sandbox, kept", slot.display()));
            continue;
        }
        match remove_tree(&slot) {
            Ok(()) => {
                let _ = std::fs::remove_file(&lock);
                said.push(format!("removed {}", slot.display()));
            }
            Err(e) => {
                failed = true;
                said.push(format!("{}: not removed: {e}", slot.display()));
            }
        }
    }
    // Empty once every slot is gone.
    let _ = std::fs::remove_dir(set);
    (said, failed)
}

fn held(lock: &Path) -> bool {
    !crate::host::caches::slot_free(lock)
}

/// rm -rf that first makes each directory writable (go's module cache and
/// overlayfs's work directory leave directories the owner cannot write),
/// walking with descriptors it holds and never following a link: a writer
/// that survives and swaps a directory for a symlink (into the home) meets
/// O_NOFOLLOW, and only the link is removed.
pub fn remove_tree(dir: &Path) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, CWD, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(CWD, dir, flags, Mode::empty()) {
        Ok(fd) => {
            empty(&fd)?;
            Ok(rustix::fs::unlinkat(CWD, dir, AtFlags::REMOVEDIR)?)
        }
        Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
            Ok(rustix::fs::unlinkat(CWD, dir, AtFlags::empty())?)
        }
        Err(e) => Err(e.into()),
    }
}

/// Removes everything in an open directory, relative to it.
fn empty(fd: &rustix::fd::OwnedFd) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    rustix::fs::fchmod(fd, Mode::from_raw_mode(0o700))?;
    let mut names = Vec::new();
    for e in rustix::fs::Dir::read_from(fd)? {
        let e = e?;
        let n = e.file_name().to_owned();
        if n.as_bytes() != b"." && n.as_bytes() != b".." {
            names.push(n);
        }
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for n in names {
        let opened = match rustix::fs::openat(fd, n.as_c_str(), flags, Mode::empty()) {
            // A directory its owner cannot read (overlayfs leaves its work
            // directory's `work` mode 0000): made readable first. With
            // O_NOFOLLOW a link would have been ELOOP.
            Err(rustix::io::Errno::ACCESS) => {
                rustix::fs::chmodat(fd, n.as_c_str(), Mode::from_raw_mode(0o700), AtFlags::empty())?;
                rustix::fs::openat(fd, n.as_c_str(), flags, Mode::empty())
            }
            other => other,
        };
        match opened {
            Ok(sub) => {
                empty(&sub)?;
                rustix::fs::unlinkat(fd, n.as_c_str(), AtFlags::REMOVEDIR)?;
            }
            Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
                rustix::fs::unlinkat(fd, n.as_c_str(), AtFlags::empty())?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A directory swapped for a symlink into the home: the link goes, the
    /// home's files stay, their modes unchanged.
    #[test]
    fn clean_never_follows_a_link() {
        let base = tempfile::tempdir().unwrap();
        let home = base.path().join("home");
        std::fs::create_dir_all(home.join("keep")).unwrap();
        std::fs::write(home.join("keep/f"), "x").unwrap();
        std::fs::set_permissions(home.join("keep"), std::fs::Permissions::from_mode(0o555)).unwrap();
        let set = base.path().join("proj-0123");
        std::fs::create_dir_all(set.join("0/.cache/upper")).unwrap();
        std::os::unix::fs::symlink(&home, set.join("0/.cache/upper/swapped")).unwrap();
        clean(std::slice::from_ref(&set));
        assert!(!set.exists());
        assert!(home.join("keep/f").exists());
        let mode = std::fs::metadata(home.join("keep")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o555);
        std::fs::set_permissions(home.join("keep"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn clean_removes_unwritable_trees_and_keeps_held_slots() {
        let base = tempfile::tempdir().unwrap();
        let set = base.path().join("proj-0123");
        let deep = set.join("0/.cache/upper/ro/sub");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f"), "x").unwrap();
        std::fs::set_permissions(
            set.join("0/.cache/upper/ro"),
            std::fs::Permissions::from_mode(0o500),
        )
        .unwrap();
        std::fs::create_dir_all(set.join("1/.cache/upper")).unwrap();
        let lock = std::fs::File::create(set.join("1.lock")).unwrap();
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
        assert!(list(base.path()).contains("(1 in use)"), "{}", list(base.path()));
        let (said, failed) = clean(std::slice::from_ref(&set));
        assert!(!failed, "{said:?}");
        assert!(!set.join("0").exists(), "{said:?}");
        assert!(
            set.join("1/.cache/upper").is_dir(),
            "a held slot is kept: {said:?}"
        );
        drop(lock);
        clean(std::slice::from_ref(&set));
        assert!(!set.exists());
    }
}
