//! Hidden paths: a small detached tmpfs (mode 0000) with an empty directory
//! `d` and an empty file `f` (both mode 0000, made while qwrap still holds
//! its capabilities in the new user namespace), cloned over each hidden path
//! and made read-only. The command, with no capabilities left, gets EACCES
//! on reading or listing one, and EROFS on changing it.

use crate::sys::kernel as k;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{CWD, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{FsMountFlags, FsOpenFlags, MountAttrFlags, MountFlags, MoveMountFlags, OpenTreeFlags};
use std::path::Path;

pub(super) fn make_source() -> Result<Source, Errno> {
    let fs = k::fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)?;
    for (key, value) in [("mode", "0000"), ("size", "4096"), ("nr_inodes", "4")] {
        k::fsconfig_set_string(fs.as_fd(), key, value)?;
    }
    k::fsconfig_create(fs.as_fd())?;
    let m = k::fsmount(
        fs.as_fd(),
        FsMountFlags::FSMOUNT_CLOEXEC,
        MountAttrFlags::MOUNT_ATTR_NOSUID
            | MountAttrFlags::MOUNT_ATTR_NODEV
            | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )?;
    k::mkdirat(m.as_fd(), "d", Mode::empty())?;
    k::openat(
        m.as_fd(),
        "f",
        OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    // Read-only once, here, so that every clone is born read-only (Linux ≥
    // 5.12); on older kernels each attach remounts its clone.
    let attr = crate::sys::MountAttr {
        attr_set: crate::sys::MOUNT_ATTR_RDONLY,
        ..Default::default()
    };
    let born_read_only = crate::sys::mount_setattr(m.as_fd(), c"", libc::AT_EMPTY_PATH as u32, &attr).is_ok();
    Ok(Source {
        fd: m,
        born_read_only,
    })
}

/// The hidden source, and whether its clones are read-only already.
pub(super) struct Source {
    pub(super) fd: OwnedFd,
    born_read_only: bool,
}

pub(super) fn attach(source: &Source, dir: bool, target: &Path) -> Result<(), Errno> {
    let name = if dir { "d" } else { "f" };
    let t = k::open_tree(
        source.fd.as_fd(),
        name,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )?;
    k::move_mount(
        t.as_fd(),
        "",
        CWD,
        target,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )?;
    if source.born_read_only {
        return Ok(());
    }
    k::mount_remount(
        target,
        MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        "",
    )
}
