//! Mount points that bwrap mode creates in the new root, with bubblewrap's
//! modes for them and for their missing parents.

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::path::Path;

/// bwrap mode: a mount point that is missing is created, parents first (as
/// directories, see `parent_mode`), then the point itself as a directory or
/// empty file.
pub(super) fn ensure(path: &Path, dir: bool, mode: u32) -> Result<(), Errno> {
    if rustix::fs::stat(path).is_ok() {
        return Ok(());
    }
    let mut prefix = std::path::PathBuf::new();
    if let Some(parent) = path.parent() {
        for comp in parent.components() {
            prefix.push(comp);
            match rustix::fs::mkdir(&prefix, Mode::from_raw_mode(parent_mode(mode))) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e),
            }
        }
    }
    let made = if dir {
        rustix::fs::mkdir(path, Mode::from_raw_mode(mode))
    } else {
        rustix::fs::open(
            path,
            OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
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
