//! Entering a new root. pivot_root(2) refuses (EINVAL) when the current root
//! is the initramfs: rootfs has no parent mount to pivot from. There, as
//! container runtimes do, the new root is moved over / and chrooted into.
//! rootfs stays beneath it, out of reach of every path: only a process
//! holding CAP_SYS_ADMIN in the sandbox could unmount the new root and see
//! it, and `run` drops every capability (bwrap mode refuses to keep it).

use super::Fail;
use crate::sys::kernel as k;
use k::{chdir, chroot, pivot_root};
use rustix::io::Errno;
use rustix::mount::UnmountFlags;
use std::path::Path;

/// `pivot_root(new_root, put_old); chdir("/")`, or on the initramfs: the old
/// tree bound at put_old, then the new root moved over /.
pub(super) fn pivot(new_root: &Path, put_old: &Path) -> Result<(), Fail> {
    match pivot_root(new_root, put_old) {
        Err(Errno::INVAL) if crate::host::root_is_initramfs() => {
            k::mount_bind_recursive("/", put_old)
                .map_err(|e| call(e, format!("mount(\"/\", {put_old:?}, MS_BIND|MS_REC)")))?;
            chdir(new_root).map_err(|e| call(e, format!("chdir({new_root:?})")))?;
            move_over_root()?;
        }
        r => r?,
    }
    chdir("/")?;
    Ok(())
}

/// `chdir(new_root); pivot_root(".", "."); umount2(".", MNT_DETACH);
/// chdir("/")`, or on the initramfs: the new root moved over /.
pub(super) fn enter(new_root: &Path) -> Result<(), Fail> {
    // Outside the initramfs fallback a failure names its call plainly.
    chdir(new_root).map_err(|e| Fail::call("chdir", format!("{new_root:?}"), e))?;
    match pivot_root(".", ".") {
        Err(Errno::INVAL) if crate::host::root_is_initramfs() => move_over_root()?,
        r => {
            r.map_err(|e| Fail::call("pivot_root", "\".\", \".\"", e))?;
            k::unmount(".", UnmountFlags::DETACH)
                .map_err(|e| Fail::call("umount2", "\".\", MNT_DETACH", e))?;
        }
    }
    chdir("/").map_err(|e| Fail::call("chdir", "\"/\"", e))?;
    Ok(())
}

/// The mount in the working directory moved over /, then made the root.
fn move_over_root() -> Result<(), Fail> {
    k::mount_move(".", "/").map_err(|e| call(e, "mount(\".\", \"/\", MS_MOVE)".into()))?;
    chroot(".").map_err(|e| call(e, "chroot(\".\")".into()))?;
    Ok(())
}

fn call(errno: Errno, what: String) -> Fail {
    Fail::with(
        errno,
        format!("the root is the initramfs, where pivot_root(2) is refused; its fallback failed at {what}"),
    )
}
