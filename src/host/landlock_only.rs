//! What the Landlock-only isolation needs from the host: whether user
//! namespaces and mounts are refused here (for `isolation = "auto"`), and
//! the directory listings that turn "beneath these roots, except these
//! paths" into Landlock's rules, which can only grant.

use crate::sys;
use crate::sys::kernel as k;
use rustix::io::Errno;
use std::path::{Path, PathBuf};

/// Why a sandbox with namespaces cannot start here, or None when it can:
/// a child tries what `run` does first (a user and a mount namespace, its
/// id map, a tmpfs mounted in it) and reports the first refusal.
pub fn namespaces_refused() -> Option<String> {
    let flags = (libc::CLONE_NEWUSER | libc::CLONE_NEWNS) as u64;
    let child = match sys::clone_fork(flags) {
        Ok(Some(pid)) => pid,
        Ok(None) => sys::exit_now(try_mount()),
        Err(e) => return Some(format!("clone(CLONE_NEWUSER|CLONE_NEWNS): {e}")),
    };
    match sys::wait_child(child).map(|s| s.exit_status()) {
        Ok(Some(0)) => None,
        Ok(Some(step)) => Some(match step {
            1 => "writing the user namespace's id map was refused".to_string(),
            2 => "mount(2) in a user namespace of its own was refused".to_string(),
            _ => format!("the probe of user namespaces failed ({step})"),
        }),
        Ok(None) => Some("the probe of user namespaces was killed".into()),
        Err(e) => Some(format!("waiting for the probe of user namespaces: {e}")),
    }
}

/// Finishes the host's probe for the isolation the plan decides: whether
/// namespaces work (asked where the setting is `auto`), then the listings
/// that `request` asks for, given what was found (None: namespaces).
pub fn finish(
    host: &mut super::HostFacts,
    auto: bool,
    request: impl FnOnce(&super::HostFacts) -> Option<Request>,
) {
    if auto {
        host.landlock_only.namespaces = Some(match namespaces_refused() {
            None => Ok(()),
            Some(why) => Err(why),
        });
    }
    if let Some(request) = request(host) {
        host.landlock_only.lists = Some(lists(&request));
    }
}

/// In the probe's child: 0 when the id map and a mount both work.
fn try_mount() -> i32 {
    let uid = rustix::process::getuid().as_raw();
    let map = |file: &str, text: String| {
        k::open(file, rustix::fs::OFlags::WRONLY, rustix::fs::Mode::empty())
            .and_then(|fd| k::write(&fd, text.as_bytes()))
    };
    if map("/proc/self/setgroups", "deny".into()).is_err()
        || map("/proc/self/uid_map", format!("{uid} {uid} 1")).is_err()
    {
        return 1;
    }
    let slave = rustix::mount::MountPropagationFlags::DOWNSTREAM | rustix::mount::MountPropagationFlags::REC;
    if k::mount_change("/", slave).is_err()
        || k::mount("tmpfs", "/tmp", "tmpfs", rustix::mount::MountFlags::empty(), None).is_err()
    {
        return 2;
    }
    0
}

/// What the Landlock-only mode learnt of the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Whether namespaces work here: probed for `isolation = "auto"` only
    /// (None: not asked).
    pub namespaces: Option<Result<(), String>>,
    /// The read and write allow-lists of a Landlock-only sandbox, once
    /// asked for (an error names the directory that could not be listed).
    pub lists: Option<Result<Lists, String>>,
    /// The run's name (`host::run_name`): names the command's own
    /// temporary directory.
    pub run: String,
}

/// Grants and exclusions, before the host's directories are listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub read_roots: Vec<PathBuf>,
    pub read_excluded: Vec<PathBuf>,
    /// Directories excluded from reads where they hold anything.
    pub read_excluded_if_held: Vec<PathBuf>,
    pub write_roots: Vec<PathBuf>,
    pub write_excluded: Vec<PathBuf>,
    /// Files to make writable where they exist (devices).
    pub write_files: Vec<PathBuf>,
    /// Directories read only where they lead to these paths (the listed
    /// home, `/home`): everything else in them is excluded from reads.
    pub read_listed: Vec<(PathBuf, Vec<PathBuf>)>,
}

/// The two allow-lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lists {
    pub read: AllowList,
    pub write: AllowList,
    /// The request's `write_files` that exist.
    pub write_files: Vec<PathBuf>,
}

/// Lists the directories a request needs. Exclusions are taken as given
/// and as they resolve (Landlock decides by where a path leads).
pub fn lists(r: &Request) -> Result<Lists, String> {
    let resolved = |v: &[PathBuf]| -> Vec<PathBuf> {
        let mut out = v.to_vec();
        out.extend(v.iter().filter_map(|p| std::fs::canonicalize(p).ok()));
        out.sort();
        out.dedup();
        out
    };
    let failed = |(p, e): (PathBuf, Errno)| format!("listing {}: {e}", p.display());
    let mut read_excluded = r.read_excluded.clone();
    for (dir, keep) in &r.read_listed {
        unlisted(dir, keep, &mut read_excluded);
    }
    read_excluded.extend(
        r.read_excluded_if_held
            .iter()
            .filter(|d| holds_readable(d))
            .cloned(),
    );
    Ok(Lists {
        read: allow_list(&r.read_roots, &resolved(&read_excluded)).map_err(failed)?,
        write: allow_list(&r.write_roots, &resolved(&r.write_excluded)).map_err(failed)?,
        write_files: r.write_files.iter().filter(|f| f.exists()).cloned().collect(),
    })
}

/// The names in `dir` that are not among `keep` nor on the way to one,
/// looking into the directories on the way (a symbolic link is not
/// followed: where it leads is decided by its target's rules).
fn unlisted(dir: &Path, keep: &[PathBuf], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if keep.iter().any(|k| p.starts_with(k)) {
            continue;
        }
        let on_the_way = keep.iter().any(|k| k.starts_with(&p));
        if on_the_way && e.file_type().is_ok_and(|t| t.is_dir()) {
            unlisted(&p, keep, out);
        } else {
            out.push(p);
        }
    }
}

/// Whether a directory holds an entry the caller could read: its own, or
/// one readable by others.
fn holds_readable(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let uid = rustix::process::getuid().as_raw();
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .any(|m| m.uid() == uid || m.mode() & 0o004 != 0)
    })
}

/// Landlock rules that grant beneath `roots` but nothing beneath
/// `excluded`: a root with an excluded path beneath it is granted entry by
/// entry (each directory on the way to an excluded path is itself only in
/// `levels`, where nothing new can be made and, for reads, only its names
/// listed). Symbolic links are left out: access through one is decided by
/// where it leads. New names made in a level later are not granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    pub beneath: Vec<PathBuf>,
    pub levels: Vec<PathBuf>,
}

pub fn allow_list(roots: &[PathBuf], excluded: &[PathBuf]) -> Result<AllowList, (PathBuf, Errno)> {
    let mut out = AllowList::default();
    for root in roots {
        grant(root, excluded, &mut out)?;
    }
    out.beneath.sort();
    out.beneath.dedup();
    out.levels.sort();
    out.levels.dedup();
    Ok(out)
}

fn grant(dir: &Path, excluded: &[PathBuf], out: &mut AllowList) -> Result<(), (PathBuf, Errno)> {
    if excluded.iter().any(|e| e == dir) {
        return Ok(());
    }
    if !excluded.iter().any(|e| e.starts_with(dir)) {
        out.beneath.push(dir.to_path_buf());
        return Ok(());
    }
    out.levels.push(dir.to_path_buf());
    let entries = std::fs::read_dir(dir)
        .map_err(|e| (dir.to_path_buf(), Errno::from_io_error(&e).unwrap_or(Errno::IO)))?;
    for entry in entries {
        let entry = entry.map_err(|e| (dir.to_path_buf(), Errno::from_io_error(&e).unwrap_or(Errno::IO)))?;
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        if kind.is_symlink() {
            continue;
        }
        if kind.is_dir() {
            grant(&path, excluded, out)?;
        } else if !excluded.contains(&path) {
            out.beneath.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_excluded_path_is_left_out_and_its_ancestors_are_levels() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for d in ["a/secret", "a/open", "b"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("a/key"), "k").unwrap();
        std::fs::write(r.join("a/readme"), "r").unwrap();
        std::os::unix::fs::symlink(r.join("a/secret"), r.join("link")).unwrap();
        let l = allow_list(&[r.to_path_buf()], &[r.join("a/secret"), r.join("a/key")]).unwrap();
        assert_eq!(l.levels, vec![r.to_path_buf(), r.join("a")]);
        assert_eq!(l.beneath, vec![r.join("a/open"), r.join("a/readme"), r.join("b")]);
        // Nothing excluded beneath a root: the root whole.
        let l = allow_list(&[r.join("b")], &[r.join("a/secret")]).unwrap();
        assert_eq!(l.beneath, vec![r.join("b")]);
        assert!(l.levels.is_empty());
        // An excluded root: nothing.
        let l = allow_list(&[r.join("a/secret")], &[r.join("a/secret")]).unwrap();
        assert_eq!(l, AllowList::default());
    }
}
