//! Overlays, made detached with the new mount API while the host's
//! directories are still where the caller named them: bwrap mode's, and
//! the one overlay of the home that serves `run`'s caches.

use super::{Executor, Fail};
use crate::plan::{OverlayPart, OverlayUpper, overlay_config};
use crate::sys::kernel as k;
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::CWD;
use rustix::fs::Mode;
use rustix::io::Errno;
use rustix::mount::{FsMountFlags, FsOpenFlags, MountAttrFlags, MoveMountFlags, OpenTreeFlags, UnmountFlags};
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

impl Executor {
    /// `Step::HomeCaches`: one overlay of the home, each cache's subtree
    /// cloned from it; an overlay per cache where the home's is refused.
    pub(super) fn home_caches(
        &mut self,
        home: &Path,
        upper: &Path,
        work: &Path,
        userxattr: bool,
        parts: &[OverlayPart],
    ) -> Result<(), Fail> {
        let proc = self.proc_dir();
        let dirs = OverlayUpper::Dirs {
            upper: upper.to_path_buf(),
            work: work.to_path_buf(),
        };
        let rel = |p: &Path| {
            p.strip_prefix(home)
                .map(Path::to_path_buf)
                .map_err(|_| Errno::INVAL)
        };
        let overlay = match make(&[home.to_path_buf()], &dirs, userxattr, &proc) {
            Ok(fd) => fd,
            // A host mount beneath the home: overlayfs may not hide it in
            // a user namespace. The same upper directories, per cache.
            Err(f) if f.errno == Errno::INVAL => {
                for (n, p) in parts.iter().enumerate() {
                    let (up, wk) = (
                        upper.join(rel(&p.path)?),
                        work.with_file_name(format!("work-{n}")),
                    );
                    for d in [&up, &wk] {
                        super::mounts_steps::mkdir_parents(d)
                            .map_err(|e| Fail::call("mkdir", format!("{d:?}, 0700"), e))?;
                    }
                    // A cache the host lacks (the listed home made it in
                    // the layer only): its upper directory alone, bound.
                    if !k::exists(&p.path) {
                        let flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
                        *self.slot(p.tree)? = Some(k::open_tree(CWD, &up, flags)?);
                        continue;
                    }
                    let one = OverlayUpper::Dirs { upper: up, work: wk };
                    *self.slot(p.tree)? = Some(make(std::slice::from_ref(&p.path), &one, userxattr, &proc)?);
                }
                return Ok(());
            }
            Err(f) => return Err(f),
        };
        let flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
        // Linux 6.15 clones from a detached mount; before, the overlay is
        // attached over the home for the moment it takes.
        let first = parts.first().ok_or(Errno::INVAL)?;
        let detached = if older_kernel_forced() {
            Err(Errno::INVAL)
        } else {
            k::open_tree(overlay.as_fd(), &rel(&first.path)?, flags)
        };
        match detached {
            Ok(tree) => {
                *self.slot(first.tree)? = Some(tree);
                for p in &parts[1..] {
                    *self.slot(p.tree)? = Some(k::open_tree(overlay.as_fd(), &rel(&p.path)?, flags)?);
                }
                return Ok(());
            }
            Err(Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        }
        k::move_mount(
            overlay.as_fd(),
            "",
            CWD,
            home,
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
        let cloned = parts.iter().try_for_each(|p| {
            *self.slot(p.tree)? = Some(k::open_tree(CWD, &p.path, flags)?);
            Ok::<(), Fail>(())
        });
        // Detached whatever happened: nothing else may see through it.
        let detached = k::unmount(home, UnmountFlags::DETACH);
        cloned?;
        Ok(detached?)
    }
}

/// Tests take the path of kernels before 6.15 on any kernel with this
/// variable set (builds with fault injection only).
const NO_DETACHED_CLONE_ENV: &str = "QWRAP_TEST_NO_DETACHED_CLONE";

fn older_kernel_forced() -> bool {
    cfg!(feature = "fault-injection") && std::env::var_os(NO_DETACHED_CLONE_ENV).is_some()
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
