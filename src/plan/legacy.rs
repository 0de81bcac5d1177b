//! The legacy mount path (`mount(2)`, Linux < 5.12, and the minimal view on
//! every kernel): pivot into a staging tmpfs, assemble the new root there
//! with binds from the old one, remount read-only from one mountinfo read.

use super::{Builder, DEVICES, Flags, LEGACY_NEW_ROOT, LEGACY_OLD_ROOT, MountOp, Role, STAGING, Step, under};
use std::path::{Path, PathBuf};

impl Builder {
    /// Legacy API: pivot into a staging tmpfs that holds the host tree at
    /// /oldroot, bind from there into /newroot, remount read-only from one
    /// mountinfo read.
    pub(super) fn mounts_legacy(&mut self, ops: &[MountOp]) -> PathBuf {
        let staging = PathBuf::from(STAGING);
        let new_root = PathBuf::from(LEGACY_NEW_ROOT);
        let old_root = PathBuf::from(LEGACY_OLD_ROOT);
        self.push(Step::MountTmpfs {
            target: staging.clone(),
            flags: Flags::NOSUID_NODEV,
            mode: 0o755,
            size: None,
        });
        for dir in [&new_root, &old_root] {
            self.push(Step::MakeMountPoint {
                path: under(&staging, dir),
                dir: true,
                mode: 0o755,
                if_missing: false,
            });
        }
        self.push(Step::PivotRoot {
            new_root: staging.clone(),
            put_old: under(&staging, &old_root),
        });
        let hidden = self.hidden_source(ops);
        for (i, op) in ops.iter().enumerate() {
            let target = under(&new_root, op.path());
            self.make_mount_point(ops, i, &new_root);
            match op {
                MountOp::HostRoot => {
                    self.push(Step::BindMount {
                        role: Role::HostRoot,
                        source: old_root.clone(),
                        target: target.clone(),
                        recursive: true,
                    });
                    self.push(Step::MakeTreePrivate {
                        target: target.clone(),
                    });
                    self.push(Step::RemountTreeReadOnly {
                        target,
                        table: under(&old_root, Path::new("/proc/self/mountinfo")),
                    });
                }
                MountOp::Writable(p) => {
                    self.push(Step::BindMount {
                        role: Role::WritableRoot,
                        source: under(&old_root, p),
                        target: target.clone(),
                        recursive: true,
                    });
                    self.push(Step::MakeTreePrivate { target });
                }
                MountOp::Overlay { path, upper, work } => {
                    // After the pivot every host path is under the old root.
                    let tree = self.overlay(
                        &under(&old_root, path),
                        &under(&old_root, upper),
                        &under(&old_root, work),
                    );
                    self.push(Step::AttachTree {
                        tree,
                        role: Role::WritableRoot,
                        target,
                    });
                }
                MountOp::Layer { upper, .. } => {
                    self.push(Step::BindMount {
                        role: Role::WritableRoot,
                        source: under(&old_root, upper),
                        target: target.clone(),
                        recursive: true,
                    });
                    self.push(Step::MakeTreePrivate { target });
                }
                MountOp::FileFrom { source, .. } => {
                    self.push(Step::BindMount {
                        role: Role::ReadOnlyPath,
                        source: under(&old_root, source),
                        target: target.clone(),
                        recursive: false,
                    });
                    self.push(Step::Remount {
                        target,
                        flags: Flags {
                            rdonly: true,
                            nosuid: true,
                            nodev: true,
                            noexec: false,
                        },
                    });
                }
                MountOp::Dir(_) => {}
                MountOp::Link { target: to, .. } => self.push(Step::Symlink {
                    target: to.clone(),
                    link: target,
                }),
                MountOp::HostFile(p) => {
                    self.push(Step::BindMount {
                        role: Role::ReadOnlyPath,
                        source: under(&old_root, p),
                        target: target.clone(),
                        recursive: false,
                    });
                    self.push(Step::RemountTreeReadOnly {
                        target,
                        table: under(&old_root, Path::new("/proc/self/mountinfo")),
                    });
                }
                MountOp::Console(tty) => {
                    self.push(Step::BindMount {
                        role: Role::Device,
                        source: under(&old_root, tty),
                        target: target.clone(),
                        recursive: false,
                    });
                    self.push(Step::Remount {
                        target,
                        flags: Flags::DEVICE_NODE,
                    });
                }
                MountOp::Mask(_) => self.push(Step::BindMount {
                    role: Role::SocketMask,
                    source: under(&old_root, Path::new("/dev/null")),
                    target,
                    recursive: false,
                }),
                MountOp::ReadOnly(_) | MountOp::HostReadOnly(_) => {
                    // A read-only path already holds the host's content in
                    // the new root; a host directory under the tmpfs does not.
                    let source = match op {
                        MountOp::HostReadOnly(p) => under(&old_root, p),
                        _ => target.clone(),
                    };
                    self.push(Step::BindMount {
                        role: Role::ReadOnlyPath,
                        source,
                        target: target.clone(),
                        recursive: true,
                    });
                    self.push(Step::RemountTreeReadOnly {
                        target,
                        table: under(&old_root, Path::new("/proc/self/mountinfo")),
                    });
                }
                MountOp::Dev(_) => {
                    self.dev(&target, |b, node, dest| {
                        b.push(Step::BindMount {
                            role: Role::Device,
                            source: under(&old_root, &Path::new("/dev").join(DEVICES[node])),
                            target: dest.clone(),
                            recursive: false,
                        });
                        b.push(Step::Remount {
                            target: dest,
                            flags: Flags::DEVICE_NODE,
                        });
                    });
                }
                MountOp::Tmpfs { mode, .. } => self.tmpfs(target, *mode),
                MountOp::Hidden { dir, .. } => self.push(Step::AttachHidden {
                    source: hidden.expect("made when a path is hidden"),
                    dir: *dir,
                    target,
                }),
            }
        }
        for op in ops {
            if let MountOp::Dev(p) = op {
                self.push(Step::Remount {
                    target: under(&new_root, p),
                    flags: Flags {
                        rdonly: true,
                        nosuid: true,
                        nodev: true,
                        noexec: true,
                    },
                });
            }
        }
        new_root
    }
}
