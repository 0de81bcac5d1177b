//! The minimal view: what of the host exists inside when `view = minimal`.
//! The system directories the dynamic loader, the shell and common
//! toolchains need, /proc and /sys, the file /etc/resolv.conf points at,
//! and the paths the user exposes; everything else (other users' homes,
//! /root, /mnt, /media, /srv, the rest of the home directory…) does not
//! exist. Read from the host when the policy is resolved; the planner only
//! lays it out.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// The host's system directories shown read-only.
pub const SYSTEM: [&str; 11] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys",
];

/// What a view entry is on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    Dir,
    File,
    /// A symlink, made again inside with the same target (merged /usr).
    Link(#[serde(serialize_with = "crate::lossy::path")] PathBuf),
}

/// One host path shown read-only in the minimal view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ViewEntry {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub kind: EntryKind,
    pub why: String,
}

/// The entries for the system directories, the resolver's configuration
/// and the exposed paths (already absolute).
pub fn minimal(exposed: &[(PathBuf, String)]) -> Vec<ViewEntry> {
    let mut out: Vec<ViewEntry> = Vec::new();
    for p in SYSTEM {
        if let Some(kind) = kind_of(Path::new(p)) {
            out.push(ViewEntry {
                path: p.into(),
                kind,
                why: "system directory".into(),
            });
        }
    }
    // /etc/resolv.conf often points into /run, which is not shown.
    if let Ok(real) = std::fs::canonicalize("/etc/resolv.conf")
        && !covered(&out, &real)
    {
        out.push(ViewEntry {
            path: real,
            kind: EntryKind::File,
            why: "the target of /etc/resolv.conf (DNS)".into(),
        });
    }
    for (p, why) in exposed {
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if covered(&out, &real) {
            continue;
        }
        if let Some(kind) = kind_of(&real) {
            out.push(ViewEntry {
                path: real,
                kind,
                why: why.clone(),
            });
        }
    }
    out
}

fn kind_of(p: &Path) -> Option<EntryKind> {
    let m = std::fs::symlink_metadata(p).ok()?;
    Some(if m.file_type().is_symlink() {
        EntryKind::Link(std::fs::read_link(p).ok()?)
    } else if m.is_dir() {
        EntryKind::Dir
    } else {
        EntryKind::File
    })
}

/// Whether `p` exists in a minimal view of these roots and entries.
pub fn shows(roots: &[super::WritableRoot], entries: &[ViewEntry], p: &Path) -> bool {
    roots.iter().any(|r| p.starts_with(&r.path))
        || entries.iter().any(|e| match e.kind {
            EntryKind::Dir => p.starts_with(&e.path),
            _ => p == e.path,
        })
}

/// Whether `p` is inside an entry already shown (through a real directory).
pub fn covered(entries: &[ViewEntry], p: &Path) -> bool {
    entries
        .iter()
        .any(|e| e.kind == EntryKind::Dir && p.starts_with(&e.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_directories_and_links() {
        let v = minimal(&[]);
        let usr = v.iter().find(|e| e.path == Path::new("/usr")).unwrap();
        assert_eq!(usr.kind, EntryKind::Dir);
        // Merged /usr: /bin is a link to usr/bin, made again inside.
        if let Ok(t) = std::fs::read_link("/bin") {
            let bin = v.iter().find(|e| e.path == Path::new("/bin")).unwrap();
            assert_eq!(bin.kind, EntryKind::Link(t));
        }
        assert!(
            v.iter()
                .all(|e| !e.path.starts_with("/home") && !e.path.starts_with("/root"))
        );
    }

    #[test]
    fn exposed_paths_once() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("tool");
        std::fs::write(&f, "x").unwrap();
        let v = minimal(&[
            (f.clone(), "--expose".into()),
            (PathBuf::from("/usr/bin"), "--expose".into()),
        ]);
        let real = std::fs::canonicalize(&f).unwrap();
        assert!(v.iter().any(|e| e.path == real && e.kind == EntryKind::File));
        assert!(!v.iter().any(|e| e.path == Path::new("/usr/bin")));
    }
}
