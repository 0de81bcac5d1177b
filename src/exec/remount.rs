//! Remounting on the legacy path and making a subtree read-only where it
//! is: each mount keeps its own flags, which a user namespace locks.

use super::*;

impl Executor {
    /// ReadOnlyInPlace: a legacy bind is a new mount over what was placed,
    /// so it is found again before it is remounted.
    pub(super) fn read_only_in_place(&self, path: &Path, legacy: bool, bubblewrap: bool) -> Result<(), Fail> {
        if read_only_in_place(path, &self.place(path, false)?, legacy, bubblewrap)? {
            remount_read_only(path, &self.place(path, false)?)?;
        }
        Ok(())
    }

    /// Legacy path: `set` added to the mount at `target` (its own flags from
    /// statfs), and with `recursive` to each mount under `source` in the
    /// table, at its place under `target`, with that mount's flags. The
    /// table is read once and reused: the host's mounts do not move.
    pub(super) fn remount_tree(
        &mut self,
        target: &Path,
        source: &Path,
        table: &Path,
        set: Flags,
        recursive: bool,
    ) -> Result<(), Fail> {
        let at = self.place(target, false)?;
        let own = k::statvfs(at.path()).map_err(|e| Fail::call("statfs", format!("{target:?}"), e))?;
        let own = statvfs_flags(own.f_flag) | ms_flags(&set);
        k::mount_remount(at.path(), MountFlags::BIND | own, "")?;
        if !recursive {
            return Ok(());
        }
        if self.mounts.is_none() {
            let text = k::read_file(table).map_err(|e| {
                Fail::call(
                    "open",
                    format!("{table:?}, O_RDONLY"),
                    Errno::from_io_error(&e).unwrap_or(Errno::IO),
                )
            })?;
            let parsed = mountinfo::parse(&text).map_err(|e| Fail::with(Errno::INVAL, e.to_string()))?;
            self.mounts = Some(parsed);
        }
        let mounts = self.mounts.as_deref().unwrap_or_default();
        // Of mounts stacked on one point only the last is reached by path:
        // a covered one's flags must not be applied to the one above it.
        let mut top = std::collections::HashMap::new();
        for (i, m) in mounts.iter().enumerate() {
            top.insert(&m.mount_point, i);
        }
        for (_, m) in mounts
            .iter()
            .enumerate()
            .filter(|(i, m)| top.get(&m.mount_point) == Some(i))
            .filter(|(_, m)| m.mount_point.starts_with(source) && m.mount_point != source)
        {
            let Ok(rel) = m.mount_point.strip_prefix(source) else {
                continue;
            };
            let path = target.join(rel);
            match k::mount_remount(&path, MountFlags::BIND | kept_flags(m) | ms_flags(&set), "") {
                Ok(()) => {}
                // Hidden under another mount or behind a directory we cannot
                // search: unreachable by path from inside, so nothing to do.
                Err(Errno::NOENT | Errno::ACCESS | Errno::INVAL) => {}
                Err(errno) => {
                    return Err(Fail::call(
                        "mount",
                        format!("NULL, {path:?}, NULL, MS_REMOUNT|MS_BIND|MS_RDONLY"),
                        errno,
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Clones the tree at `path`, makes the clone read-only and puts it back
/// over `path`. Like bubblewrap, a path this process cannot write anyway is
/// left alone.
/// Each call that fails is named, with its path.
/// `at` is where the path was found (inside the new root, in bwrap mode).
/// `legacy`: a bind onto itself, left to be remounted read-only (`true`).
fn read_only_in_place(
    path: &Path,
    at: &in_root::Placed,
    legacy: bool,
    bubblewrap: bool,
) -> Result<bool, Fail> {
    let call = |what: &'static str| move |e: Errno| Fail::call(what, format!("{path:?}"), e);
    // bwrap mode asks as bubblewrap does (its drop-in tests compare views);
    // run asks whether the mount is read-only already: access(W_OK) says no
    // on procfs's sysctl directories (mode 0555) even where every sysctl in
    // them is writable for uid 0, which needs no capability.
    let left_alone = if bubblewrap {
        matches!(
            k::access(at.path(), rustix::fs::Access::WRITE_OK),
            Err(Errno::ACCESS | Errno::NOENT | Errno::ROFS)
        )
    } else {
        k::statvfs(at.path())
            .map_err(call("statfs"))?
            .f_flag
            .contains(rustix::fs::StatVfsMountFlags::RDONLY)
    };
    if left_alone {
        return Ok(false);
    }
    if legacy {
        k::mount_bind_recursive(at.path(), at.path()).map_err(call("mount(MS_BIND)"))?;
        return Ok(true);
    }
    let t = k::open_tree(
        CWD,
        at.path(),
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC | OpenTreeFlags::AT_RECURSIVE,
    )
    .map_err(call("open_tree"))?;
    let attr = sys::MountAttr {
        attr_set: sys::MOUNT_ATTR_RDONLY,
        ..Default::default()
    };
    sys::mount_setattr(
        t.as_fd(),
        c"",
        libc::AT_EMPTY_PATH as u32 | sys::AT_RECURSIVE,
        &attr,
    )
    .map_err(call("mount_setattr(RDONLY) on the clone of"))?;
    // A path placed in the new root names its descriptor: followed.
    let follow = if at.via_fd() {
        MoveMountFlags::MOVE_MOUNT_T_SYMLINKS
    } else {
        MoveMountFlags::empty()
    };
    k::move_mount(
        t.as_fd(),
        "",
        CWD,
        at.path(),
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | follow,
    )
    .map_err(call("move_mount"))?;
    Ok(false)
}

/// The legacy path's second half of ReadOnlyInPlace: the bind remounted
/// read-only, keeping its own flags.
fn remount_read_only(path: &Path, at: &in_root::Placed) -> Result<(), Fail> {
    let call = |what: &'static str| move |e: Errno| Fail::call(what, format!("{path:?}"), e);
    let own = k::statvfs(at.path()).map_err(call("statfs"))?;
    let flags = MountFlags::BIND | MountFlags::RDONLY | statvfs_flags(own.f_flag);
    k::mount_remount(at.path(), flags, "").map_err(call("mount(MS_REMOUNT|MS_RDONLY)"))
}

/// A mount's own flags, which a remount must keep (a user namespace locks
/// them).
fn kept_flags(m: &mountinfo::MountEntry) -> MountFlags {
    ms_flags(&Flags {
        rdonly: m.read_only,
        nosuid: m.nosuid,
        nodev: m.nodev,
        noexec: m.noexec,
    })
}

/// The same, as statfs reports them.
fn statvfs_flags(f: rustix::fs::StatVfsMountFlags) -> MountFlags {
    use rustix::fs::StatVfsMountFlags as S;
    ms_flags(&Flags {
        rdonly: f.contains(S::RDONLY),
        nosuid: f.contains(S::NOSUID),
        nodev: f.contains(S::NODEV),
        noexec: f.contains(S::NOEXEC),
    })
}

/// `MS_*` flags for mount(2).
pub(super) fn ms_flags(f: &Flags) -> MountFlags {
    let mut out = MountFlags::empty();
    for (on, flag) in [
        (f.rdonly, MountFlags::RDONLY),
        (f.nosuid, MountFlags::NOSUID),
        (f.nodev, MountFlags::NODEV),
        (f.noexec, MountFlags::NOEXEC),
    ] {
        if on {
            out |= flag;
        }
    }
    out
}
