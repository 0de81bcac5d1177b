//! The mount steps: trees, filesystems, mount points and the new root.

use super::remount::ms_flags;
use super::*;
use crate::plan::{
    AttachHidden, AttachTree, BindMount, Chmod, ClaimPty, CloneTree, CopyFdToFile, EnterRoot, HomeCaches,
    MakeHiddenSource, MakeMountPoint, MakeOverlay, MakeTreePrivate, MountDevpts, MountMqueue, MountProc,
    MountStep, MountTmpfs, PivotRoot, ReadOnlyInPlace, Remount, RemountTree, SetPathAttr, SetTreeAttr,
    Symlink,
};

impl Executor {
    /// One mount step: each its own call.
    pub(super) fn mount_step(&mut self, step: MountStep<'_>) -> Result<(), Fail> {
        match step {
            MountStep::CloneTree(s) => self.clone_tree_step(s)?,
            MountStep::MountTmpfs(s) => self.mount_tmpfs_step(s)?,
            MountStep::AttachTree(s) => self.attach_tree_step(s)?,
            MountStep::MakeMountPoint(s) => self.make_mount_point_step(s)?,
            MountStep::Symlink(s) => self.symlink_step(s)?,
            MountStep::BindMount(s) => self.bind_mount_step(s)?,
            MountStep::SetTreeAttr(s) => self.set_tree_attr_step(s)?,
            MountStep::SetPathAttr(s) => self.set_path_attr_step(s)?,
            MountStep::MakeTreePrivate(s) => self.make_tree_private_step(s)?,
            MountStep::RemountTree(s) => self.remount_tree_step(s)?,
            MountStep::Remount(s) => self.remount_step(s)?,
            MountStep::PivotRoot(s) => self.pivot_root_step(s)?,
            MountStep::EnterRoot(s) => self.enter_root_step(s)?,
            MountStep::MountDevpts(s) => self.mount_devpts_step(s)?,
            MountStep::ClaimPty(s) => self.claim_pty_step(s)?,
            MountStep::MakeHiddenSource(s) => self.make_hidden_source_step(s)?,
            MountStep::AttachHidden(s) => self.attach_hidden_step(s)?,
            MountStep::MountProc(s) => self.mount_proc_step(s)?,
            MountStep::MountMqueue(s) => self.mount_mqueue_step(s)?,
            MountStep::ReadOnlyInPlace(s) => self.read_only_in_place_step(s)?,
            MountStep::CopyFdToFile(s) => self.copy_fd_to_file_step(s)?,
            MountStep::Chmod(s) => self.chmod_step(s)?,
            MountStep::MakeOverlay(s) => self.make_overlay_step(s)?,
            MountStep::HomeCaches(s) => self.home_caches_step(s)?,
            MountStep::MakeMountsSlave => {
                k::mount_change(
                    "/",
                    MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
                )?;
            }
        }
        Ok(())
    }

    fn clone_tree_step(&mut self, s: &CloneTree) -> Result<(), Fail> {
        let CloneTree {
            tree,
            source,
            recursive,
            ..
        } = s;
        let mut flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
        if *recursive {
            flags |= OpenTreeFlags::AT_RECURSIVE;
        }
        *self.slot(*tree)? = Some(k::open_tree(CWD, source, flags)?);
        Ok(())
    }

    fn mount_tmpfs_step(&mut self, s: &MountTmpfs) -> Result<(), Fail> {
        let MountTmpfs {
            target,
            flags,
            mode,
            size,
        } = s;
        let size = size.map(|s| format!(",size={s}")).unwrap_or_default();
        let data = CString::new(format!("mode={mode:04o}{size}")).expect("no NUL");
        let target = self.place(target, false)?;
        k::mount("tmpfs", target.path(), "tmpfs", ms_flags(flags), data.as_c_str())?;
        Ok(())
    }

    fn attach_tree_step(&mut self, s: &AttachTree) -> Result<(), Fail> {
        let AttachTree { tree, target, role } = s;
        let fd = self
            .trees
            .get_mut(*tree)
            .and_then(Option::take)
            .ok_or(Errno::BADF)?;
        let target = self.place(target, false)?;
        // A bind follows a symlink at its destination (resolved in
        // the new root already when placed there).
        let follow = if *role == crate::plan::Role::Bind || target.via_fd() {
            MoveMountFlags::MOVE_MOUNT_T_SYMLINKS
        } else {
            MoveMountFlags::empty()
        };
        let attached = k::move_mount(
            fd.as_fd(),
            "",
            CWD,
            target.path(),
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | follow,
        );
        tolerate_vanished_socket(*role, attached)?;
        Ok(())
    }

    fn make_mount_point_step(&mut self, s: &MakeMountPoint) -> Result<(), Fail> {
        match s {
            MakeMountPoint {
                path,
                dir,
                mode,
                if_missing: true,
            } => match &self.root {
                Some(root) => root.ensure(path, *dir, *mode)?,
                None => mount_point::ensure(CWD, path, rustix::fs::ResolveFlags::empty(), *dir, *mode)?,
            },
            MakeMountPoint {
                path,
                dir: true,
                mode,
                ..
            } => k::mkdir(self.place(path, true)?.path(), Mode::from_raw_mode(*mode))?,
            // One mknod, not open + close: an empty file fails if it exists.
            MakeMountPoint { path, mode, .. } => k::mknodat(
                CWD,
                self.place(path, true)?.path(),
                rustix::fs::FileType::RegularFile,
                Mode::from_raw_mode(*mode),
                0,
            )?,
        }
        Ok(())
    }

    fn symlink_step(&mut self, s: &Symlink) -> Result<(), Fail> {
        let Symlink { target, link } = s;
        self.symlink(target, link)?;
        Ok(())
    }

    fn bind_mount_step(&mut self, s: &BindMount) -> Result<(), Fail> {
        let BindMount {
            source,
            target,
            recursive,
            role,
        } = s;
        let target = self.place(target, false)?;
        if *recursive {
            k::mount_bind_recursive(source, target.path())?;
        } else {
            tolerate_vanished_socket(*role, k::mount_bind(source, target.path()))?;
        }
        Ok(())
    }

    fn set_tree_attr_step(&mut self, s: &SetTreeAttr) -> Result<(), Fail> {
        let SetTreeAttr { tree, set, private } = s;
        let attr = sys::MountAttr {
            attr_set: attr_bits(set),
            propagation: if *private { sys::MS_PRIVATE } else { 0 },
            ..Default::default()
        };
        let fd = self.tree(*tree)?;
        sys::mount_setattr(
            fd.as_fd(),
            c"",
            libc::AT_EMPTY_PATH as u32 | sys::AT_RECURSIVE,
            &attr,
        )?;
        Ok(())
    }

    fn set_path_attr_step(&mut self, s: &SetPathAttr) -> Result<(), Fail> {
        let SetPathAttr {
            target,
            recursive,
            set,
            private,
        } = s;
        let path = CString::new(target.as_os_str().as_bytes()).map_err(|_| Errno::INVAL)?;
        let attr = sys::MountAttr {
            attr_set: attr_bits(set),
            propagation: if *private { sys::MS_PRIVATE } else { 0 },
            ..Default::default()
        };
        let flags = if *recursive { sys::AT_RECURSIVE } else { 0 };
        sys::mount_setattr(CWD, &path, flags, &attr)?;
        Ok(())
    }

    fn make_tree_private_step(&mut self, s: &MakeTreePrivate) -> Result<(), Fail> {
        let MakeTreePrivate { target } = s;
        k::mount_change(
            target,
            MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
        )?;
        Ok(())
    }

    fn remount_tree_step(&mut self, s: &RemountTree) -> Result<(), Fail> {
        let RemountTree {
            target,
            source,
            table,
            set,
            recursive,
        } = s;
        self.remount_tree(target, source, table, *set, *recursive)?;
        Ok(())
    }

    fn remount_step(&mut self, s: &Remount) -> Result<(), Fail> {
        let Remount { target, flags } = s;
        let target = self.place(target, false)?;
        k::mount_remount(target.path(), MountFlags::BIND | ms_flags(flags), "")?;
        Ok(())
    }

    fn pivot_root_step(&mut self, s: &PivotRoot) -> Result<(), Fail> {
        let PivotRoot { new_root, put_old } = s;
        reroot::pivot(new_root, put_old)?;
        if let Some(root) = &mut self.root {
            root.pivoted(new_root, put_old);
        }
        Ok(())
    }

    fn enter_root_step(&mut self, s: &EnterRoot) -> Result<(), Fail> {
        let EnterRoot { new_root } = s;
        reroot::enter(new_root)?;
        Ok(())
    }

    fn mount_devpts_step(&mut self, s: &MountDevpts) -> Result<(), Fail> {
        let MountDevpts { target } = s;
        k::mount(
            "devpts",
            target,
            "devpts",
            MountFlags::NOSUID | MountFlags::NOEXEC,
            c"newinstance,ptmxmode=0666,mode=620",
        )?;
        Ok(())
    }

    fn claim_pty_step(&mut self, s: &ClaimPty) -> Result<(), Fail> {
        let ClaimPty { target, index } = s;
        let held = claim_pty(&target.with_file_name("ptmx"), *index)?;
        let link = self.warden.as_ref().ok_or(Errno::NOTCONN)?;
        link.hand_over(crate::supervise::handover::Handed::Terminal(held))?;
        Ok(())
    }

    fn make_hidden_source_step(&mut self, s: &MakeHiddenSource) -> Result<(), Fail> {
        let MakeHiddenSource { .. } = s;
        self.hidden = Some(hidden::make_source()?);
        Ok(())
    }

    fn attach_hidden_step(&mut self, s: &AttachHidden) -> Result<(), Fail> {
        let AttachHidden { dir, target, .. } = s;
        hidden::attach(self.hidden.as_ref().ok_or(Errno::BADF)?, *dir, target)?;
        Ok(())
    }

    fn mount_proc_step(&mut self, s: &MountProc) -> Result<(), Fail> {
        let MountProc { target } = s;
        k::mount(
            "proc",
            self.place(target, false)?.path(),
            "proc",
            MountFlags::NOSUID | MountFlags::NOEXEC | MountFlags::NODEV,
            None,
        )?;
        Ok(())
    }

    fn mount_mqueue_step(&mut self, s: &MountMqueue) -> Result<(), Fail> {
        let MountMqueue { target } = s;
        k::mount(
            "mqueue",
            self.place(target, false)?.path(),
            "mqueue",
            MountFlags::empty(),
            None,
        )?;
        Ok(())
    }

    fn read_only_in_place_step(&mut self, s: &ReadOnlyInPlace) -> Result<(), Fail> {
        let ReadOnlyInPlace {
            path,
            legacy,
            bubblewrap,
        } = s;
        match self.read_only_in_place(path, *legacy, *bubblewrap) {
            // Not every kernel has every /proc entry.
            Err(f) if f.errno == Errno::NOENT => {}
            other => other?,
        };
        Ok(())
    }

    fn copy_fd_to_file_step(&mut self, s: &CopyFdToFile) -> Result<(), Fail> {
        let CopyFdToFile { fd, path, mode } = s;
        let data = sys::read_inherited_fd(*fd).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
        let file = k::open(
            self.place(path, true)?.path(),
            OFlags::CREATE | OFlags::WRONLY | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(*mode),
        )?;
        let mut rest = &data[..];
        while !rest.is_empty() {
            let n = k::write(&file, rest)?;
            rest = &rest[n..];
        }
        k::fchmod(&file, Mode::from_raw_mode(*mode))?;
        Ok(())
    }

    fn chmod_step(&mut self, s: &Chmod) -> Result<(), Fail> {
        let Chmod { path, mode } = s;
        k::chmod(self.place(path, false)?.path(), Mode::from_raw_mode(*mode))?;
        Ok(())
    }

    fn make_overlay_step(&mut self, s: &MakeOverlay) -> Result<(), Fail> {
        let MakeOverlay {
            tree,
            lower,
            upper,
            userxattr,
        } = s;
        *self.slot(*tree)? = Some(overlay::make(lower, upper, *userxattr, &self.proc_dir())?);
        Ok(())
    }

    fn home_caches_step(&mut self, s: &HomeCaches) -> Result<(), Fail> {
        let HomeCaches {
            home,
            upper,
            work,
            userxattr,
            parts,
        } = s;
        self.home_caches(home, upper, work, *userxattr, parts)?;
        Ok(())
    }

    /// A symlink at `link`: as bubblewrap, one already there with the same
    /// target is the one asked for.
    fn symlink(&mut self, target: &Path, link: &Path) -> Result<(), Fail> {
        let at = self.place(link, true)?;
        match k::symlink(target, at.path()) {
            Err(Errno::EXIST) => match k::read_link(at.path()) {
                Ok(t) if t == target => {}
                found => {
                    return Err(Fail::with(
                        Errno::EXIST,
                        match found {
                            Ok(t) => format!(
                                "Can't make symlink at {}: existing destination is {}",
                                link.display(),
                                t.display()
                            ),
                            Err(_) => format!(
                                "Can't make symlink at {}: something else is there",
                                link.display()
                            ),
                        },
                    ));
                }
            },
            other => other?,
        }
        Ok(())
    }
}

/// A host socket can vanish between the inventory and the mask: then there is
/// nothing to mask.
fn tolerate_vanished_socket(role: crate::plan::Role, r: Result<(), Errno>) -> Result<(), Errno> {
    match r {
        Err(Errno::NOENT) if role == crate::plan::Role::SocketMask => Ok(()),
        other => other,
    }
}

fn attr_bits(f: &Flags) -> u64 {
    [
        (f.rdonly, sys::MOUNT_ATTR_RDONLY),
        (f.nosuid, sys::MOUNT_ATTR_NOSUID),
        (f.nodev, sys::MOUNT_ATTR_NODEV),
        (f.noexec, sys::MOUNT_ATTR_NOEXEC),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |acc, (_, bit)| acc | bit)
}

/// mkdir -p with mode 0700: the directory, making missing parents first.
pub(super) fn mkdir_parents(dir: &Path) -> Result<(), Errno> {
    match k::mkdir(dir, Mode::from_raw_mode(0o700)) {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) if dir.is_dir() => Ok(()),
        Err(Errno::NOENT) => {
            mkdir_parents(dir.parent().ok_or(Errno::NOENT)?)?;
            match k::mkdir(dir, Mode::from_raw_mode(0o700)) {
                Err(Errno::EXIST) if dir.is_dir() => Ok(()),
                other => other,
            }
        }
        Err(e) => Err(e),
    }
}

/// Opens `ptmx` until the pty numbered `index` exists (a fresh devpts hands
/// out the lowest free number); returns that one, closing the rest.
fn claim_pty(ptmx: &Path, index: u32) -> Result<OwnedFd, Errno> {
    let mut below = Vec::new();
    for _ in 0..=index {
        let pty = k::open(
            ptmx,
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        match k::pty_number(&pty)? {
            n if n == index => return Ok(pty),
            n if n < index => below.push(pty),
            // Taken already: the name is not free to show the terminal.
            _ => return Err(Errno::EXIST),
        }
    }
    Err(Errno::EXIST)
}

/// What on this host explains a mount step's errno, where the step knows.
pub(super) fn hint(step: MountStep<'_>, raw: i32) -> Option<String> {
    Some(match step {
        MountStep::MakeOverlay(MakeOverlay { lower, .. }) if raw == libc::EINVAL => format!(
            "overlayfs in a user namespace refuses a lower layer with mounts beneath it (it would hide them): is a host mount beneath {}? --review needs the workspace without one; for `qwrap run`'s caches, --cache private uses a tmpfs instead",
            lower
                .iter()
                .map(|l| l.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        MountStep::MakeOverlay(_) if raw != libc::ENOSYS => {
            "overlayfs refused the layers (its words above); for `qwrap run`'s caches, --cache private uses \
             a tmpfs instead"
                .into()
        }
        MountStep::CloneTree(_)
        | MountStep::AttachTree(_)
        | MountStep::SetTreeAttr(_)
        | MountStep::SetPathAttr(_)
        | MountStep::ReadOnlyInPlace(ReadOnlyInPlace { legacy: false, .. })
            if raw == libc::ENOSYS =>
        {
            "this kernel lacks the new mount API (open_tree and move_mount: Linux 5.2; mount_setattr: \
             Linux 5.12); QWRAP_MOUNT_API=legacy uses mount(2), as qwrap does by itself where \
             mount_setattr is missing"
                .into()
        }
        MountStep::MakeMountPoint(MakeMountPoint { if_missing: true, .. }) if raw == libc::ENOSYS => {
            "this kernel lacks openat2(2) (Linux 5.6), which bwrap mode needs to find destinations \
             inside the new root"
                .into()
        }
        _ => return None,
    })
}
