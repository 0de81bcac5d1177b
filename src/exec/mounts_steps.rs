//! The mount steps: trees, filesystems, mount points and the new root.

use super::remount::ms_flags;
use super::*;
use crate::plan::{
    AttachHidden, AttachTree, BindMount, Chmod, ClaimPty, CloneTree, CopyFdToFile, EnterRoot, HomeCaches,
    MakeHiddenSource, MakeMountPoint, MakeOverlay, MakeTreePrivate, MountDevpts, MountMqueue, MountProc,
    MountTmpfs, PivotRoot, ReadOnlyInPlace, Remount, RemountTree, SetPathAttr, SetTreeAttr, Symlink,
};

impl Executor {
    pub(super) fn mount_step(&mut self, step: &Step) -> Result<(), Fail> {
        match step {
            Step::MakeMountsSlave => {
                k::mount_change(
                    "/",
                    MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
                )?;
            }
            Step::CloneTree(CloneTree {
                tree,
                source,
                recursive,
                ..
            }) => {
                let mut flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
                if *recursive {
                    flags |= OpenTreeFlags::AT_RECURSIVE;
                }
                *self.slot(*tree)? = Some(k::open_tree(CWD, source, flags)?);
            }
            Step::MountTmpfs(MountTmpfs {
                target,
                flags,
                mode,
                size,
            }) => {
                let size = size.map(|s| format!(",size={s}")).unwrap_or_default();
                let data = CString::new(format!("mode={mode:04o}{size}")).expect("no NUL");
                let target = self.place(target, false)?;
                k::mount("tmpfs", target.path(), "tmpfs", ms_flags(flags), data.as_c_str())?;
            }
            Step::AttachTree(AttachTree { tree, target, role }) => {
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
            }
            Step::MakeMountPoint(MakeMountPoint {
                path,
                dir,
                mode,
                if_missing: true,
            }) => match &self.root {
                Some(root) => root.ensure(path, *dir, *mode)?,
                None => mount_point::ensure(CWD, path, rustix::fs::ResolveFlags::empty(), *dir, *mode)?,
            },
            Step::MakeMountPoint(MakeMountPoint {
                path,
                dir: true,
                mode,
                ..
            }) => k::mkdir(self.place(path, true)?.path(), Mode::from_raw_mode(*mode))?,
            // One mknod, not open + close: an empty file fails if it exists.
            Step::MakeMountPoint(MakeMountPoint { path, mode, .. }) => k::mknodat(
                CWD,
                self.place(path, true)?.path(),
                rustix::fs::FileType::RegularFile,
                Mode::from_raw_mode(*mode),
                0,
            )?,
            Step::Symlink(Symlink { target, link }) => self.symlink(target, link)?,
            Step::BindMount(BindMount {
                source,
                target,
                recursive,
                role,
            }) => {
                let target = self.place(target, false)?;
                if *recursive {
                    k::mount_bind_recursive(source, target.path())?;
                } else {
                    tolerate_vanished_socket(*role, k::mount_bind(source, target.path()))?;
                }
            }
            Step::MountDevpts(MountDevpts { .. })
            | Step::ClaimPty(ClaimPty { .. })
            | Step::MakeHiddenSource(MakeHiddenSource { .. })
            | Step::AttachHidden(AttachHidden { .. })
            | Step::MountProc(MountProc { .. })
            | Step::MountMqueue(MountMqueue { .. })
            | Step::ReadOnlyInPlace(ReadOnlyInPlace { .. })
            | Step::CopyFdToFile(CopyFdToFile { .. })
            | Step::Chmod(Chmod { .. })
            | Step::MakeOverlay(MakeOverlay { .. })
            | Step::HomeCaches(HomeCaches { .. }) => self.filesystem_step(step)?,
            Step::SetTreeAttr(SetTreeAttr { .. })
            | Step::SetPathAttr(SetPathAttr { .. })
            | Step::MakeTreePrivate(MakeTreePrivate { .. })
            | Step::RemountTree(RemountTree { .. })
            | Step::Remount(Remount { .. })
            | Step::PivotRoot(PivotRoot { .. })
            | Step::EnterRoot(EnterRoot { .. }) => self.attribute_step(step)?,
            _ => return Err(Errno::INVAL.into()),
        }
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

    /// Mount attributes changed in place, and the switch to the new root.
    fn attribute_step(&mut self, step: &Step) -> Result<(), Fail> {
        match step {
            Step::SetTreeAttr(SetTreeAttr { tree, set, private }) => {
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
            }
            Step::SetPathAttr(SetPathAttr {
                target,
                recursive,
                set,
                private,
            }) => {
                let path = CString::new(target.as_os_str().as_bytes()).map_err(|_| Errno::INVAL)?;
                let attr = sys::MountAttr {
                    attr_set: attr_bits(set),
                    propagation: if *private { sys::MS_PRIVATE } else { 0 },
                    ..Default::default()
                };
                let flags = if *recursive { sys::AT_RECURSIVE } else { 0 };
                sys::mount_setattr(CWD, &path, flags, &attr)?;
            }
            Step::MakeTreePrivate(MakeTreePrivate { target }) => {
                k::mount_change(
                    target,
                    MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
                )?;
            }
            Step::RemountTree(RemountTree {
                target,
                source,
                table,
                set,
                recursive,
            }) => self.remount_tree(target, source, table, *set, *recursive)?,
            Step::Remount(Remount { target, flags }) => {
                let target = self.place(target, false)?;
                k::mount_remount(target.path(), MountFlags::BIND | ms_flags(flags), "")?;
            }
            Step::PivotRoot(PivotRoot { new_root, put_old }) => {
                reroot::pivot(new_root, put_old)?;
                if let Some(root) = &mut self.root {
                    root.pivoted(new_root, put_old);
                }
            }
            Step::EnterRoot(EnterRoot { new_root }) => reroot::enter(new_root)?,
            _ => return Err(Errno::INVAL.into()),
        }
        Ok(())
    }

    /// The filesystems of the sandbox's own (devpts, proc, mqueue, the
    /// hidden tmpfs, overlays) and paths changed in place.
    fn filesystem_step(&mut self, step: &Step) -> Result<(), Fail> {
        match step {
            Step::MountDevpts(MountDevpts { target }) => {
                k::mount(
                    "devpts",
                    target,
                    "devpts",
                    MountFlags::NOSUID | MountFlags::NOEXEC,
                    c"newinstance,ptmxmode=0666,mode=620",
                )?;
            }
            Step::ClaimPty(ClaimPty { target, index }) => {
                let held = claim_pty(&target.with_file_name("ptmx"), *index)?;
                let link = self.warden.as_ref().ok_or(Errno::NOTCONN)?;
                link.hand_over(crate::supervise::handover::Handed::Terminal(held))?;
            }
            Step::MakeHiddenSource(MakeHiddenSource { .. }) => self.hidden = Some(hidden::make_source()?),
            Step::AttachHidden(AttachHidden { dir, target, .. }) => {
                hidden::attach(self.hidden.as_ref().ok_or(Errno::BADF)?, *dir, target)?
            }
            Step::MountProc(MountProc { target }) => {
                k::mount(
                    "proc",
                    self.place(target, false)?.path(),
                    "proc",
                    MountFlags::NOSUID | MountFlags::NOEXEC | MountFlags::NODEV,
                    None,
                )?;
            }
            Step::MountMqueue(MountMqueue { target }) => {
                k::mount(
                    "mqueue",
                    self.place(target, false)?.path(),
                    "mqueue",
                    MountFlags::empty(),
                    None,
                )?;
            }
            Step::ReadOnlyInPlace(ReadOnlyInPlace {
                path,
                legacy,
                bubblewrap,
            }) => match self.read_only_in_place(path, *legacy, *bubblewrap) {
                // Not every kernel has every /proc entry.
                Err(f) if f.errno == Errno::NOENT => {}
                other => other?,
            },
            Step::CopyFdToFile(CopyFdToFile { fd, path, mode }) => {
                let data =
                    sys::read_inherited_fd(*fd).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
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
            }
            Step::Chmod(Chmod { path, mode }) => {
                k::chmod(self.place(path, false)?.path(), Mode::from_raw_mode(*mode))?
            }
            Step::MakeOverlay(MakeOverlay {
                tree,
                lower,
                upper,
                userxattr,
            }) => {
                *self.slot(*tree)? = Some(overlay::make(lower, upper, *userxattr, &self.proc_dir())?);
            }
            Step::HomeCaches(HomeCaches {
                home,
                upper,
                work,
                userxattr,
                parts,
            }) => self.home_caches(home, upper, work, *userxattr, parts)?,
            _ => return Err(Errno::INVAL.into()),
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
