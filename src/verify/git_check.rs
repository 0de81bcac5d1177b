//! The in-sandbox check of the git guard: no git dir can be renamed away (a
//! swapped `.git` would carry planted hooks), and no pointer file can be
//! created where none exists (an absent `commondir` would send a later host
//! `git` to a common dir of the command's making). The second is a known
//! gap (docs/security.md): the warden moves such a file aside when the
//! command exits, but while the command runs a host git would follow it,
//! so the check reports it as the failure it is.

use super::Check;
use crate::errno::errno_text;
use std::path::{Path, PathBuf};

const N: &str = "git-pointers";
const T: &str = "git dirs cannot be swapped, git pointers cannot change";

pub fn check(git_dirs: &[PathBuf], tag: &str) -> Check {
    if git_dirs.is_empty() {
        return Check::skip(
            N,
            T,
            "no guarded git dirs (not a checkout, or --allow-git-config)".into(),
        );
    }
    for d in git_dirs {
        let moved = d.with_file_name(format!("{}{tag}", file_name(d)));
        match rustix::fs::rename(d, &moved) {
            // A mount point (EBUSY), or in a read-only parent (EROFS).
            Err(rustix::io::Errno::BUSY | rustix::io::Errno::ROFS) => {}
            Err(e) => {
                return Check::fail(
                    N,
                    T,
                    &errno_text(libc::EBUSY),
                    format!("rename {}: {}", d.display(), errno_text(e.raw_os_error())),
                );
            }
            Ok(()) => {
                let _ = rustix::fs::rename(&moved, d);
                return Check::fail(
                    N,
                    T,
                    &errno_text(libc::EBUSY),
                    format!("{} could be renamed", d.display()),
                );
            }
        }
    }
    for d in git_dirs.iter().filter(|d| d.join("HEAD").is_file()) {
        let pointer = d.join("commondir");
        if std::fs::symlink_metadata(&pointer).is_ok() {
            continue;
        }
        if super::create(&pointer).is_ok() {
            let _ = std::fs::remove_file(&pointer);
            return Check::fail(
                N,
                T,
                "no new pointer files",
                format!(
                    "{} could be created: a host git running meanwhile would follow it (a known gap; qwrap moves it aside when the command exits)",
                    pointer.display()
                ),
            );
        }
    }
    Check::pass(N, T)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
