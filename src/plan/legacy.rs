//! The legacy mount path (`mount(2)`, Linux < 5.12, and the minimal view on
//! every kernel), for both front ends: pivot into a staging tmpfs, assemble
//! the new root there with binds from the old one, remount with the flags
//! each mount needs from one mountinfo read.

use super::{
    Builder, DEVICES, DevStyle, Flags, LEGACY_NEW_ROOT, LEGACY_OLD_ROOT, MountOp, ProcCover, Role, STAGING,
    Shape, Step, under,
};
use std::path::{Path, PathBuf};

impl Builder {
    /// Legacy API: pivot into a staging tmpfs that holds the host tree at
    /// /oldroot, bind from there into /newroot. Returns the new root, which
    /// the caller enters once its other steps are in.
    pub(super) fn mounts_legacy(&mut self, ops: &[MountOp], shape: Shape) -> PathBuf {
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
        if !ops.iter().any(|op| op.path() == Path::new("/")) {
            // Nothing mounts the root itself (bwrap mode): a mount of its
            // own, so that it can be pivoted into.
            self.push(Step::BindMount {
                role: Role::HostRoot,
                source: new_root.clone(),
                target: new_root.clone(),
                recursive: false,
            });
        }
        let table = under(&old_root, Path::new("/proc/self/mountinfo"));
        let host = |p: &Path| under(&old_root, p);
        let hidden = self.hidden_source(ops);
        let in_home = self.split_home_overlay(ops, &host, shape.userxattr);
        for (i, op) in ops.iter().enumerate() {
            let target = under(&new_root, op.path());
            if shape.ensure_points {
                self.ensure_point(op, &target, &new_root);
            } else {
                self.make_mount_point(ops, i, &new_root);
            }
            // A bind of a tree (`from`, whose mounts the table lists under
            // `listed`), `set` added to each of its mounts.
            let tree = |b: &mut Self, role: Role, from: PathBuf, listed: PathBuf, set: Flags| {
                b.push(Step::BindMount {
                    role,
                    source: from,
                    target: target.clone(),
                    recursive: true,
                });
                if matches!(role, Role::HostRoot | Role::Bind) {
                    b.push(Step::MakeTreePrivate {
                        target: target.clone(),
                    });
                }
                b.push(Step::RemountTree {
                    target: target.clone(),
                    source: listed,
                    table: table.clone(),
                    set,
                    recursive: true,
                });
            };
            match op {
                MountOp::HostRoot => tree(
                    self,
                    Role::HostRoot,
                    old_root.clone(),
                    old_root.clone(),
                    Flags::RDONLY_NOSUID,
                ),
                MountOp::Writable(p) => {
                    self.push(Step::BindMount {
                        role: Role::WritableRoot,
                        source: host(p),
                        target: target.clone(),
                        recursive: true,
                    });
                    self.push(Step::MakeTreePrivate { target });
                }
                MountOp::Layer { upper: p, .. } => {
                    self.push(Step::BindMount {
                        role: Role::WritableRoot,
                        source: host(p),
                        target: target.clone(),
                        recursive: true,
                    });
                    self.push(Step::MakeTreePrivate { target });
                }
                MountOp::Bind {
                    source,
                    readonly,
                    devices,
                    ..
                } => tree(
                    self,
                    Role::Bind,
                    host(source),
                    host(source),
                    Flags::bind(*readonly, *devices),
                ),
                MountOp::InHomeLayer { .. } => {
                    if let Some(&tree) = in_home.get(&i) {
                        self.push(Step::AttachTree {
                            tree,
                            role: op.role(),
                            target,
                        });
                    }
                }
                MountOp::Overlay { lower, upper, .. } => {
                    // After the pivot every host path is under the old root.
                    let upper = upper.map_dirs(host);
                    let lower: Vec<PathBuf> = lower.iter().map(|l| host(l)).collect();
                    let tree = self.overlay(&lower, &upper, shape.userxattr);
                    self.push(Step::AttachTree {
                        tree,
                        role: op.role(),
                        target,
                    });
                }
                MountOp::HostFile(p) => {
                    self.push(Step::BindMount {
                        role: Role::ReadOnlyPath,
                        source: host(p),
                        target: target.clone(),
                        recursive: false,
                    });
                    self.push(Step::RemountTree {
                        target,
                        source: host(p),
                        table: table.clone(),
                        set: Flags::RDONLY_NOSUID,
                        recursive: false,
                    });
                }
                MountOp::FileFrom { source: p, .. } => {
                    self.push(Step::BindMount {
                        role: Role::ReadOnlyPath,
                        source: host(p),
                        target: target.clone(),
                        recursive: false,
                    });
                    self.push(Step::Remount {
                        target,
                        flags: Flags::RDONLY_NOSUID_NODEV,
                    });
                }
                MountOp::Console(tty) | MountOp::TerminalName { tty, .. } => {
                    if let MountOp::TerminalName { index, .. } = op {
                        self.push(Step::ClaimPty {
                            target: target.clone(),
                            index: *index,
                        });
                    }
                    self.push(Step::BindMount {
                        role: Role::Device,
                        source: host(tty),
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
                    source: host(Path::new("/dev/null")),
                    target,
                    recursive: false,
                }),
                // A read-only path already holds the host's content in the
                // new root; a host directory under the tmpfs does not.
                MountOp::ReadOnly(p) => tree(
                    self,
                    Role::ReadOnlyPath,
                    target.clone(),
                    host(p),
                    Flags::RDONLY_NOSUID,
                ),
                MountOp::HostReadOnly(p) => {
                    tree(self, Role::ReadOnlyPath, host(p), host(p), Flags::RDONLY_NOSUID)
                }
                MountOp::Dev { style, .. } => {
                    let minimal = matches!(style, DevStyle::Minimal { .. });
                    let console = match style {
                        DevStyle::Bubblewrap { console } => console.clone(),
                        DevStyle::Minimal { .. } => None,
                    };
                    self.lower_dev(style, &target, |b, node, dest| {
                        let source = match DEVICES.get(node) {
                            Some(d) => host(&Path::new("/dev").join(d)),
                            None => host(console.as_deref().unwrap_or(Path::new("/dev/console"))),
                        };
                        b.push(Step::BindMount {
                            role: Role::Device,
                            source,
                            target: dest.clone(),
                            recursive: false,
                        });
                        // run's nodes read-only; bubblewrap's as the host
                        // mounts them.
                        if minimal {
                            b.push(Step::Remount {
                                target: dest,
                                flags: Flags::DEVICE_NODE,
                            });
                        }
                    });
                }
                MountOp::Proc { own, cover, .. } => {
                    if *own {
                        self.push(Step::MountProc {
                            target: target.clone(),
                        });
                    } else {
                        self.push(Step::BindMount {
                            role: Role::HostRoot,
                            source: host(Path::new("/proc")),
                            target: target.clone(),
                            recursive: true,
                        });
                    }
                    for sub in cover.entries() {
                        self.push(Step::ReadOnlyInPlace {
                            path: target.join(sub),
                            legacy: true,
                            bubblewrap: *cover == ProcCover::Bubblewrap,
                        });
                    }
                }
                MountOp::Seal(_) => self.push(Step::Remount {
                    target,
                    flags: Flags::RDONLY_NOSUID_NODEV,
                }),
                MountOp::RemountReadOnly(_) => self.push(Step::RemountTree {
                    target: target.clone(),
                    source: target,
                    table: table.clone(),
                    set: Flags {
                        rdonly: true,
                        ..Flags::NONE
                    },
                    recursive: false,
                }),
                // After the pivot the staging tmpfs is the root: `--bind-data`
                // files live in it, beside the new root.
                _ => self.lower_common(op, target, hidden, Path::new("/")),
            }
        }
        for op in ops {
            if let MountOp::Dev {
                path,
                style: DevStyle::Minimal { .. },
            } = op
            {
                self.push(Step::Remount {
                    target: under(&new_root, path),
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
