//! What lowering shares between the mount APIs: mount points, /dev, and the
//! operations that are the same calls on either (tmpfs, symlinks, files,
//! mqueue, chmod, hidden paths, `--bind-data`).

use super::{Builder, DEVICES, DevStyle, Flags, MountOp, Role, Step, TreeId, under};
use crate::plan::{
    AttachHidden, BindMount, Chmod, CopyFdToFile, MakeMountPoint, MountDevpts, MountMqueue, MountTmpfs,
    Remount, Symlink,
};
use std::path::{Path, PathBuf};

impl Builder {
    /// When op `i` lands on a filesystem the plan created (a tmpfs), its mount
    /// point does not exist yet: create each missing directory.
    pub(super) fn make_mount_point(&mut self, ops: &[MountOp], i: usize, root: &Path) {
        let path = ops[i].path();
        let parent = ops[..i]
            .iter()
            .filter(|o| path.starts_with(o.path()) && o.path() != path)
            .max_by_key(|o| o.path().components().count());
        let Some(parent) = parent else { return };
        if !parent.creates_filesystem() {
            return;
        }
        let mut dir = under(root, parent.path());
        let rel = path.strip_prefix(parent.path()).unwrap_or(path);
        let n = rel.components().count();
        for (k, comp) in rel.components().enumerate() {
            dir.push(comp);
            if !self.made.insert(dir.clone()) {
                continue;
            }
            // A file's mount point is an empty file; a link makes itself,
            // a terminal's name is claimed.
            let last = k + 1 == n;
            if last && matches!(ops[i], MountOp::Link { .. } | MountOp::TerminalName { .. }) {
                continue;
            }
            if last && !ops[i].mounts_on_a_directory() {
                self.push(Step::MakeMountPoint(MakeMountPoint {
                    path: dir.clone(),
                    dir: false,
                    mode: 0o444,
                    if_missing: false,
                }));
            } else {
                self.push(Step::MakeMountPoint(MakeMountPoint {
                    path: dir.clone(),
                    dir: true,
                    mode: 0o755,
                    if_missing: false,
                }));
            }
        }
    }

    /// bwrap mode's mount points: made where missing, parents first, as
    /// bubblewrap makes them (a file bound on is 0444, a directory 0755;
    /// `--dir` with its own mode; a link's or a file's parent).
    pub(super) fn ensure_point(&mut self, op: &MountOp, target: &Path, root: &Path) {
        let ensure = |path: &Path, dir: bool, mode: u32| {
            Step::MakeMountPoint(MakeMountPoint {
                path: path.to_path_buf(),
                dir,
                mode,
                if_missing: true,
            })
        };
        let step = match op {
            MountOp::Dir { mode, .. } => ensure(target, true, *mode),
            MountOp::Link { .. } | MountOp::File { .. } => match target.parent() {
                Some(parent) => ensure(parent, true, 0o755),
                None => return,
            },
            MountOp::RemountReadOnly(_) | MountOp::Chmod { .. } => return,
            _ if target == root => return,
            op if op.mounts_on_a_directory() => ensure(target, true, 0o755),
            _ => ensure(target, false, 0o444),
        };
        self.push(step);
    }

    /// A /dev: a tmpfs with the host's nodes bound over empty files
    /// (`bind` attaches node `i` at a path; the caller's terminal is node
    /// `DEVICES.len()`), a new devpts with `ptmx`, `shm` and the
    /// /proc/self/fd links. `run`'s is noexec with /dev/shm a tmpfs of its
    /// own; bubblewrap's allows exec, makes `core` and `console` too, and
    /// leaves `shm` a directory.
    pub(super) fn lower_dev(
        &mut self,
        style: &DevStyle,
        dev: &Path,
        mut bind: impl FnMut(&mut Self, usize, PathBuf),
    ) {
        let (minimal, console, shm_size) = match style {
            DevStyle::Minimal { shm_size } => (true, false, *shm_size),
            DevStyle::Bubblewrap { console } => (false, console.is_some(), None),
        };
        self.push(Step::MountTmpfs(MountTmpfs {
            target: dev.to_path_buf(),
            flags: Flags {
                noexec: minimal,
                ..Flags::NOSUID_NODEV
            },
            mode: 0o755,
            size: None,
        }));
        self.made.insert(dev.to_path_buf());
        let point = |path: PathBuf, dir: bool| {
            Step::MakeMountPoint(MakeMountPoint {
                path,
                dir,
                mode: if dir { 0o755 } else { 0o444 },
                if_missing: false,
            })
        };
        for (i, name) in DEVICES.iter().enumerate() {
            self.push(point(dev.join(name), false));
            bind(self, i, dev.join(name));
        }
        for dir in ["pts", "shm"] {
            self.push(point(dev.join(dir), true));
            self.made.insert(dev.join(dir));
        }
        self.push(Step::MountDevpts(MountDevpts {
            target: dev.join("pts"),
        }));
        if minimal {
            self.push(Step::MountTmpfs(MountTmpfs {
                target: dev.join("shm"),
                flags: Flags::NOSUID_NODEV,
                mode: 0o1777,
                size: shm_size,
            }));
        }
        let core = (!minimal).then_some(("core", "/proc/kcore"));
        for (link, target) in [
            ("ptmx", "pts/ptmx"),
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ]
        .into_iter()
        .chain(core)
        {
            self.push(Step::Symlink(Symlink {
                target: target.into(),
                link: dev.join(link),
            }));
        }
        if console {
            self.push(point(dev.join("console"), false));
            bind(self, DEVICES.len(), dev.join("console"));
        }
    }

    /// The operations that are the same calls on either mount API.
    /// `beside`: where `--bind-data` files are made, outside the new root.
    pub(super) fn lower_common(
        &mut self,
        op: &MountOp,
        target: PathBuf,
        hidden: Option<TreeId>,
        beside: &Path,
    ) {
        match op {
            MountOp::Tmpfs { mode, size, .. } => {
                self.made.insert(target.clone());
                self.push(Step::MountTmpfs(MountTmpfs {
                    target,
                    flags: Flags::NOSUID_NODEV,
                    mode: *mode,
                    size: *size,
                }));
            }
            MountOp::Link { target: to, .. } => self.push(Step::Symlink(Symlink {
                target: to.clone(),
                link: target,
            })),
            MountOp::Mqueue(_) => self.push(Step::MountMqueue(MountMqueue { target })),
            MountOp::File { fd, mode, .. } => self.push(Step::CopyFdToFile(CopyFdToFile {
                fd: *fd,
                path: target,
                mode: *mode,
            })),
            MountOp::BindData {
                fd, readonly, mode, ..
            } => {
                let data = beside.join(format!(".bind-data-{}", self.data_files));
                self.data_files += 1;
                self.push(Step::CopyFdToFile(CopyFdToFile {
                    fd: *fd,
                    path: data.clone(),
                    mode: *mode,
                }));
                self.push(Step::BindMount(BindMount {
                    role: Role::WritableRoot,
                    source: data,
                    target: target.clone(),
                    recursive: false,
                }));
                if *readonly {
                    self.push(Step::Remount(Remount {
                        target,
                        flags: Flags::RDONLY_NOSUID_NODEV,
                    }));
                }
            }
            MountOp::Chmod { mode, .. } => self.push(Step::Chmod(Chmod {
                path: target,
                mode: *mode,
            })),
            MountOp::Hidden { dir, .. } => self.push(Step::AttachHidden(AttachHidden {
                source: hidden.expect("made when a path is hidden"),
                dir: *dir,
                target,
            })),
            // Made as its mount point.
            MountOp::Dir { .. } => {}
            _ => unreachable!("{op:?} is lowered by the mount API's own code"),
        }
    }
}
