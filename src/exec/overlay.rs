//! bwrap mode's overlays, made detached with the new mount API while the
//! host's directories are still where the caller named them.

use super::Fail;
use crate::plan::{OverlayUpper, overlay_config};
use crate::sys::kernel as k;
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::Mode;
use rustix::io::Errno;
use rustix::mount::{FsMountFlags, FsOpenFlags, MountAttrFlags};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The overlay as a detached mount; a failure carries what overlayfs said.
/// `proc`: where /proc is now (the legacy path's pivot moves it).
pub(super) fn make(
    lower: &[PathBuf],
    upper: &OverlayUpper,
    userxattr: bool,
    proc: &Path,
) -> Result<OwnedFd, Fail> {
    // --tmp-overlay: the upper and work directories on a tmpfs of their own,
    // reached through its descriptor; overlayfs keeps it once mounted.
    let tmp = match upper {
        OverlayUpper::Tmpfs => Some(upper_tmpfs()?),
        _ => None,
    };
    let tmp_root = tmp
        .as_ref()
        .map(|m| format!("{}/self/fd/{}", proc.display(), m.as_raw_fd()))
        .unwrap_or_default();
    let fs = k::fsopen("overlay", FsOpenFlags::FSOPEN_CLOEXEC)?;
    let configured = overlay_config(lower, upper, userxattr, &tmp_root)
        .into_iter()
        .try_for_each(|(key, value)| {
            if value.is_empty() {
                k::fsconfig_set_flag(fs.as_fd(), key)
            } else {
                k::fsconfig_set_string(fs.as_fd(), key, OsStr::from_bytes(&value))
            }
        })
        .and_then(|()| k::fsconfig_create(fs.as_fd()));
    if let Err(e) = configured {
        return Err(Fail::with(e, kernel_log(&fs)));
    }
    k::fsmount(
        fs.as_fd(),
        FsMountFlags::FSMOUNT_CLOEXEC,
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
    )
    .map_err(|e| Fail::with(e, kernel_log(&fs)))
}

fn upper_tmpfs() -> Result<OwnedFd, Errno> {
    let fs = k::fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)?;
    k::fsconfig_set_string(fs.as_fd(), "mode", "0755")?;
    k::fsconfig_create(fs.as_fd())?;
    let m = k::fsmount(
        fs.as_fd(),
        FsMountFlags::FSMOUNT_CLOEXEC,
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
    )?;
    k::mkdirat(m.as_fd(), "upper", Mode::from_raw_mode(0o755))?;
    k::mkdirat(m.as_fd(), "work", Mode::from_raw_mode(0o755))?;
    Ok(m)
}

/// The messages the kernel left on the filesystem context ("e overlayfs:
/// …"), which say which layer it refused and why.
fn kernel_log(fs: &OwnedFd) -> String {
    let mut lines = Vec::new();
    let mut buf = [0u8; 512];
    while let Ok(n) = k::read(fs, &mut buf) {
        if n == 0 {
            break;
        }
        lines.push(String::from_utf8_lossy(&buf[..n]).trim_end().to_string());
    }
    lines.join("; ")
}
