//! Mount points that bwrap mode creates in the new root, with bubblewrap's
//! modes for them and for their missing parents.

use crate::sys::kernel as k;
use rustix::fd::BorrowedFd;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::path::{Path, PathBuf};

/// bwrap mode: a mount point that is missing is created, parents first (as
/// directories, see `parent_mode`), then the point itself as a directory or
/// empty file. `rel` is looked up from `base` with `resolve`: inside the new
/// root (`RESOLVE_IN_ROOT`), a symlink on the way resolves as the sandbox
/// will see it and never leads onto the host.
pub(super) fn ensure(
    base: BorrowedFd<'_>,
    rel: &Path,
    resolve: ResolveFlags,
    dir: bool,
    mode: u32,
) -> Result<(), Errno> {
    let open = |p: &Path, extra: OFlags| {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        k::openat2(
            base,
            p,
            OFlags::PATH | OFlags::CLOEXEC | extra,
            Mode::empty(),
            resolve,
        )
    };
    if open(rel, OFlags::empty()).is_ok() {
        return Ok(());
    }
    let parent = rel.parent().unwrap_or(Path::new(""));
    let mut prefix = PathBuf::new();
    for comp in parent.components() {
        let up = prefix.clone();
        prefix.push(comp);
        match open(&prefix, OFlags::DIRECTORY) {
            Ok(_) => continue,
            Err(Errno::NOENT) => {}
            Err(e) => return Err(e),
        }
        let name = prefix.file_name().ok_or(Errno::INVAL)?;
        match k::mkdirat(
            open(&up, OFlags::DIRECTORY)?,
            name,
            Mode::from_raw_mode(parent_mode(mode)),
        ) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e),
        }
    }
    let at = open(parent, OFlags::DIRECTORY)?;
    let name = rel.file_name().ok_or(Errno::INVAL)?;
    let made = if dir {
        k::mkdirat(&at, name, Mode::from_raw_mode(mode))
    } else {
        // Never through a symlink already there: that is the caller's to
        // follow when mounting, inside the root.
        k::openat(
            &at,
            name,
            OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map(drop)
    };
    match made {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(e) => Err(e),
    }
}

/// bubblewrap's mode for a missing parent: the owner may do anything; group
/// and others may enter and list when the destination gives them anything.
fn parent_mode(mode: u32) -> u32 {
    let class = |shift: u32| {
        if mode & (0o7 << shift) != 0 {
            0o5 << shift
        } else {
            0
        }
    };
    0o700 | class(3) | class(0)
}

#[cfg(test)]
mod tests {
    use super::parent_mode;

    #[test]
    fn parents_take_bubblewraps_modes() {
        for (mode, want) in [
            (0o1777, 0o755),
            (0o755, 0o755),
            (0o644, 0o755),
            (0o444, 0o755),
            (0o750, 0o750),
            (0o720, 0o750),
            (0o640, 0o750),
            (0o700, 0o700),
            (0o600, 0o700),
            (0o604, 0o705),
            (0o000, 0o700),
        ] {
            assert_eq!(parent_mode(mode), want, "{mode:o}");
        }
    }
}
