//! The new mount API's sequence (Linux ≥ 5.12), in place.

use super::{Builder, DEVICES, Flags, MountOp, OverlayUpper, Role, Step};
use std::path::{Path, PathBuf};

impl Builder {
    /// New mount API, in place: the namespace's own copy of the host tree
    /// becomes the sandbox's root. What must differ from it (writable roots,
    /// read-only paths, device nodes, socket masks) is cloned first; then one
    /// `mount_setattr(AT_RECURSIVE)` makes the whole tree read-only and
    /// private; then everything is mounted over it, parents first. No
    /// staging root and no pivot are needed.
    pub(super) fn mounts_new_api(&mut self, ops: &[MountOp]) {
        let root = PathBuf::from("/");
        let hidden = self.hidden_source(ops);
        let mut trees = Vec::with_capacity(ops.len());
        for op in ops {
            let tree = match op {
                MountOp::HostRoot
                | MountOp::Tmpfs { .. }
                | MountOp::Hidden { .. }
                | MountOp::Link { .. }
                | MountOp::Dir(_) => Vec::new(),
                MountOp::HostFile(p) => {
                    vec![self.clone_with(Role::ReadOnlyPath, p, false, Flags::RDONLY_NOSUID, true)]
                }
                MountOp::Writable(p) => {
                    vec![self.clone_with(Role::WritableRoot, p, true, Flags::NOSUID, true)]
                }
                MountOp::Overlay { path, upper, work } => vec![self.overlay(path, upper, work)],
                MountOp::Layer { upper, .. } => {
                    vec![self.clone_with(Role::WritableRoot, upper, true, Flags::NOSUID, true)]
                }
                MountOp::FileFrom { source, .. } => {
                    vec![self.clone_with(Role::ReadOnlyPath, source, false, Flags::RDONLY_NOSUID, true)]
                }
                MountOp::ReadOnly(p) | MountOp::HostReadOnly(p) => {
                    vec![self.clone_with(Role::ReadOnlyPath, p, true, Flags::RDONLY_NOSUID, true)]
                }
                // Read-only clones: the device stays usable (a read-only
                // mount does not stop device I/O) but its mode, owner and
                // times on the host cannot change.
                MountOp::Dev(_) => DEVICES
                    .iter()
                    .map(|d| {
                        self.clone_with(
                            Role::Device,
                            &Path::new("/dev").join(d),
                            false,
                            Flags::RDONLY_NOSUID,
                            false,
                        )
                    })
                    .collect(),
                MountOp::Console(tty) => {
                    vec![self.clone_with(Role::Device, tty, false, Flags::RDONLY_NOSUID, false)]
                }
                MountOp::Mask(_) => vec![self.clone_tree(Role::SocketMask, Path::new("/dev/null"), false)],
            };
            trees.push(tree);
        }
        self.push(Step::SetPathAttr {
            target: root.clone(),
            recursive: true,
            set: Flags {
                rdonly: true,
                nosuid: true,
                ..Flags::NONE
            },
            private: true,
        });
        for (i, op) in ops.iter().enumerate() {
            let target = op.path().to_path_buf();
            self.make_mount_point(ops, i, &root);
            match op {
                MountOp::HostRoot => {}
                MountOp::Dir(_) => {}
                MountOp::Link { target: to, .. } => self.push(Step::Symlink {
                    target: to.clone(),
                    link: target,
                }),
                MountOp::Writable(_)
                | MountOp::Overlay { .. }
                | MountOp::FileFrom { .. }
                | MountOp::Layer { .. }
                | MountOp::ReadOnly(_)
                | MountOp::HostReadOnly(_)
                | MountOp::HostFile(_)
                | MountOp::Mask(_)
                | MountOp::Console(_) => {
                    let role = op.role();
                    self.push(Step::AttachTree {
                        tree: trees[i][0],
                        role,
                        target,
                    });
                }
                MountOp::Dev(_) => {
                    self.dev(&target, |b, node, dest| {
                        b.push(Step::AttachTree {
                            tree: trees[i][node],
                            role: Role::Device,
                            target: dest,
                        })
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
                self.push(Step::SetPathAttr {
                    target: p.clone(),
                    recursive: false,
                    set: Flags {
                        rdonly: true,
                        ..Flags::NONE
                    },
                    private: false,
                });
            }
        }
    }

    /// A cache's overlay, detached: `lower` is resolved when it is made.
    pub(super) fn overlay(&mut self, lower: &Path, upper: &Path, work: &Path) -> usize {
        let tree = self.trees;
        self.trees += 1;
        self.push(Step::MakeOverlay {
            tree,
            lower: vec![lower.to_path_buf()],
            upper: OverlayUpper::Dirs {
                upper: upper.to_path_buf(),
                work: work.to_path_buf(),
            },
            // The sandbox's user namespace: trusted xattrs are out of reach.
            userxattr: true,
        });
        tree
    }
}
