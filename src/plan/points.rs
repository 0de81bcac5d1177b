//! What lowering shares between the mount APIs: mount points, /dev, and the
//! operations that are the same calls on either (tmpfs, symlinks, files,
//! mqueue, chmod, hidden paths, `--bind-data`).

use super::{Builder, DEVICES, DevStyle, Flags, MountOp, Role, Step, TreeId, under};
use std::path::{Path, PathBuf};

impl Builder {
    /// `run`'s /dev: a tmpfs with the host nodes bound over empty files, devpts, shm
    /// and the /proc/self/fd links. `bind` attaches host node `i` at a path.
    fn dev(&mut self, dev: &Path, mut bind: impl FnMut(&mut Self, usize, PathBuf)) {
        self.push(Step::MountTmpfs {
            target: dev.to_path_buf(),
            flags: Flags {
                nosuid: true,
                nodev: true,
                noexec: true,
                ..Flags::NONE
            },
            mode: 0o755,
            size: None,
        });
        self.made.insert(dev.to_path_buf());
        for (i, name) in DEVICES.iter().enumerate() {
            let path = dev.join(name);
            self.push(Step::MakeMountPoint {
                path: path.clone(),
                dir: false,
                mode: 0o444,
                if_missing: false,
            });
            bind(self, i, path);
        }
        for dir in ["pts", "shm"] {
            self.push(Step::MakeMountPoint {
                path: dev.join(dir),
                dir: true,
                mode: 0o755,
                if_missing: false,
            });
            self.made.insert(dev.join(dir));
        }
        self.push(Step::MountDevpts {
            target: dev.join("pts"),
        });
        self.push(Step::Symlink {
            target: "pts/ptmx".into(),
            link: dev.join("ptmx"),
        });
        self.push(Step::MountTmpfs {
            target: dev.join("shm"),
            flags: Flags::NOSUID_NODEV,
            mode: 0o1777,
            size: None,
        });
        for (link, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            self.push(Step::Symlink {
                target: target.into(),
                link: dev.join(link),
            });
        }
    }

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
            // A file's mount point is an empty file; a link makes itself.
            let last = k + 1 == n;
            if last && matches!(ops[i], MountOp::Link { .. }) {
                continue;
            }
            if last && matches!(ops[i], MountOp::Console(_) | MountOp::HostFile(_)) {
                self.push(Step::MakeMountPoint {
                    path: dir.clone(),
                    dir: false,
                    mode: 0o444,
                    if_missing: false,
                });
            } else {
                self.push(Step::MakeMountPoint {
                    path: dir.clone(),
                    dir: true,
                    mode: 0o755,
                    if_missing: false,
                });
            }
        }
    }

    /// bwrap mode's mount points: made where missing, parents first, as
    /// bubblewrap makes them (a file bound on is 0444, a directory 0755;
    /// `--dir` with its own mode; a link's or a file's parent).
    pub(super) fn ensure_point(&mut self, op: &MountOp, target: &Path, root: &Path) {
        let ensure = |path: &Path, dir: bool, mode: u32| Step::MakeMountPoint {
            path: path.to_path_buf(),
            dir,
            mode,
            if_missing: true,
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

    pub(super) fn lower_dev(
        &mut self,
        style: &DevStyle,
        dev: &Path,
        bind: impl FnMut(&mut Self, usize, PathBuf),
    ) {
        match style {
            DevStyle::Minimal => self.dev(dev, bind),
            DevStyle::Bubblewrap { console } => self.dev_bubblewrap(dev, console.is_some(), bind),
        }
    }

    /// bubblewrap's /dev: a tmpfs with the host's nodes bound over empty
    /// files, the /proc/self/fd links and `core`, an `shm` directory, a new
    /// devpts with `ptmx`, and the caller's terminal as `console` (node
    /// `DEVICES.len()`).
    fn dev_bubblewrap(&mut self, dev: &Path, console: bool, mut bind: impl FnMut(&mut Self, usize, PathBuf)) {
        self.push(Step::MountTmpfs {
            target: dev.to_path_buf(),
            flags: Flags::NOSUID_NODEV,
            mode: 0o755,
            size: None,
        });
        let file = |path: PathBuf| Step::MakeMountPoint {
            path,
            dir: false,
            mode: 0o444,
            if_missing: false,
        };
        for (i, name) in DEVICES.iter().enumerate() {
            self.push(file(dev.join(name)));
            bind(self, i, dev.join(name));
        }
        for (link, target) in [
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
            ("fd", "/proc/self/fd"),
            ("core", "/proc/kcore"),
        ] {
            self.push(Step::Symlink {
                target: target.into(),
                link: dev.join(link),
            });
        }
        for dir in ["shm", "pts"] {
            self.push(Step::MakeMountPoint {
                path: dev.join(dir),
                dir: true,
                mode: 0o755,
                if_missing: false,
            });
        }
        self.push(Step::MountDevpts {
            target: dev.join("pts"),
        });
        self.push(Step::Symlink {
            target: "pts/ptmx".into(),
            link: dev.join("ptmx"),
        });
        if console {
            self.push(file(dev.join("console")));
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
                self.push(Step::MountTmpfs {
                    target,
                    flags: Flags::NOSUID_NODEV,
                    mode: *mode,
                    size: *size,
                });
            }
            MountOp::Link { target: to, .. } => self.push(Step::Symlink {
                target: to.clone(),
                link: target,
            }),
            MountOp::Mqueue(_) => self.push(Step::MountMqueue { target }),
            MountOp::File { fd, mode, .. } => self.push(Step::CopyFdToFile {
                fd: *fd,
                path: target,
                mode: *mode,
            }),
            MountOp::BindData {
                fd, readonly, mode, ..
            } => {
                let data = beside.join(format!(".bind-data-{}", self.data_files));
                self.data_files += 1;
                self.push(Step::CopyFdToFile {
                    fd: *fd,
                    path: data.clone(),
                    mode: *mode,
                });
                self.push(Step::BindMount {
                    role: Role::WritableRoot,
                    source: data,
                    target: target.clone(),
                    recursive: false,
                });
                if *readonly {
                    self.push(Step::Remount {
                        target,
                        flags: Flags::RDONLY_NOSUID_NODEV,
                    });
                }
            }
            MountOp::Chmod { mode, .. } => self.push(Step::Chmod {
                path: target,
                mode: *mode,
            }),
            MountOp::Hidden { dir, .. } => self.push(Step::AttachHidden {
                source: hidden.expect("made when a path is hidden"),
                dir: *dir,
                target,
            }),
            // Made as its mount point.
            MountOp::Dir { .. } => {}
            _ => unreachable!("{op:?} is lowered by the mount API's own code"),
        }
    }
}
