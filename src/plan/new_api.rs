//! The new mount API's sequence (Linux ≥ 5.12), for both front ends: every
//! host source is cloned (and given its flags) before anything is mounted;
//! then the root is prepared — `run`'s host tree in place, made read-only
//! and private by one `mount_setattr(AT_RECURSIVE)`, or bwrap mode's empty
//! staged root — and each operation lands on it in order.

use super::{
    Builder, DEVICES, DevStyle, Flags, MountOp, OverlayUpper, ProcCover, Role, STAGED_NEW_ROOT, STAGING,
    Shape, Step, under,
};
use crate::plan::{
    AttachTree, BindMount, ClaimPty, MakeMountPoint, MakeOverlay, MountProc, MountTmpfs, ReadOnlyInPlace,
    SetPathAttr,
};
use std::path::{Path, PathBuf};

impl Builder {
    /// Lowers `ops`; returns the new root when the shape stages one (the
    /// caller enters it once its other steps are in).
    pub(super) fn mounts_new_api(&mut self, ops: &[MountOp], shape: Shape) -> Option<PathBuf> {
        let hidden = self.hidden_source(ops);
        let in_home = self.split_home_overlay(ops, &|p: &Path| p.to_path_buf(), shape.userxattr);
        let trees: Vec<Vec<usize>> = ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                in_home
                    .get(&i)
                    .map_or_else(|| self.sources(op, shape), |t| vec![*t])
            })
            .collect();
        let root = self.new_root(shape.staged);
        for (i, op) in ops.iter().enumerate() {
            let target = under(&root, op.path());
            if shape.ensure_points {
                self.ensure_point(op, &target, &root);
            } else {
                self.make_mount_point(ops, i, &root);
            }
            let t = &trees[i];
            match op {
                MountOp::HostRoot
                | MountOp::Writable(_)
                | MountOp::Overlay { .. }
                | MountOp::InHomeLayer { .. }
                | MountOp::FileFrom { .. }
                | MountOp::Layer { .. }
                | MountOp::ReadOnly(_)
                | MountOp::HostReadOnly(_)
                | MountOp::HostFile(_)
                | MountOp::Mask(_)
                | MountOp::Console(_)
                | MountOp::TerminalName { .. }
                | MountOp::Bind { .. } => {
                    if let MountOp::TerminalName { index, .. } = op {
                        self.push(Step::ClaimPty(ClaimPty {
                            target: target.clone(),
                            index: *index,
                        }));
                    }
                    // In place, the host tree is the root already.
                    if matches!(op, MountOp::HostRoot) && !shape.staged {
                        continue;
                    }
                    self.push(Step::AttachTree(AttachTree {
                        tree: t[0],
                        role: op.role(),
                        target,
                    }));
                }
                MountOp::Dev { style, .. } => self.lower_dev(style, &target, |b, node, dest| {
                    b.push(Step::AttachTree(AttachTree {
                        tree: t[node],
                        role: Role::Device,
                        target: dest,
                    }))
                }),
                MountOp::Proc { own, cover, .. } => self.attach_proc(*own, *cover, t, &target),
                MountOp::RemountReadOnly(_) | MountOp::Seal(_) => self.push(Step::SetPathAttr(SetPathAttr {
                    target,
                    recursive: false,
                    set: Flags {
                        rdonly: true,
                        ..Flags::NONE
                    },
                    private: false,
                })),
                _ => self.lower_common(op, target, hidden, Path::new(STAGING)),
            }
        }
        for op in ops {
            if let MountOp::Dev {
                path,
                style: DevStyle::Minimal { .. },
            } = op
            {
                self.push(Step::SetPathAttr(SetPathAttr {
                    target: under(&root, path),
                    recursive: false,
                    set: Flags {
                        rdonly: true,
                        ..Flags::NONE
                    },
                    private: false,
                }));
            }
        }
        shape.staged.then_some(root)
    }

    /// /proc: a new one of the PID namespace's own, or the host's cloned;
    /// then what its cover makes read-only in place.
    fn attach_proc(&mut self, own: bool, cover: ProcCover, trees: &[usize], target: &Path) {
        if own {
            self.push(Step::MountProc(MountProc {
                target: target.to_path_buf(),
            }));
        } else {
            self.push(Step::AttachTree(AttachTree {
                tree: trees[0],
                role: Role::HostRoot,
                target: target.to_path_buf(),
            }));
        }
        for sub in cover.entries() {
            self.push(Step::ReadOnlyInPlace(ReadOnlyInPlace {
                path: target.join(sub),
                legacy: false,
                bubblewrap: cover == ProcCover::Bubblewrap,
            }));
        }
    }

    /// Where the new tree is built: a staged root on a tmpfs (pivoted
    /// into later), or the host's tree in place, made read-only first.
    fn new_root(&mut self, staged: bool) -> PathBuf {
        if staged {
            self.push(Step::MountTmpfs(MountTmpfs {
                target: PathBuf::from(STAGING),
                flags: Flags::NOSUID_NODEV,
                mode: 0o755,
                size: None,
            }));
            let new_root = PathBuf::from(STAGED_NEW_ROOT);
            self.push(Step::MakeMountPoint(MakeMountPoint {
                path: new_root.clone(),
                dir: true,
                mode: 0o755,
                if_missing: false,
            }));
            // A mount of its own, so that it can be pivoted into.
            self.push(Step::BindMount(BindMount {
                role: Role::HostRoot,
                source: new_root.clone(),
                target: new_root.clone(),
                recursive: false,
            }));
            new_root
        } else {
            self.push(Step::SetPathAttr(SetPathAttr {
                target: PathBuf::from("/"),
                recursive: true,
                set: Flags {
                    rdonly: true,
                    nosuid: true,
                    ..Flags::NONE
                },
                private: true,
            }));
            PathBuf::from("/")
        }
    }

    /// The trees an operation mounts, cloned (with their flags) or made
    /// while every host path is still as named.
    fn sources(&mut self, op: &MountOp, shape: Shape) -> Vec<usize> {
        match op {
            MountOp::HostRoot if shape.staged => {
                vec![self.clone_with(Role::HostRoot, Path::new("/"), true, Flags::RDONLY_NOSUID, true)]
            }
            MountOp::HostFile(p) => {
                vec![self.clone_with(Role::ReadOnlyPath, p, false, Flags::RDONLY_NOSUID, true)]
            }
            MountOp::Writable(p) => {
                vec![self.clone_with(Role::WritableRoot, p, true, Flags::NOSUID, true)]
            }
            MountOp::Overlay { lower, upper, .. } => vec![self.overlay(lower, upper, shape.userxattr)],
            MountOp::Layer { upper, .. } => {
                vec![self.clone_with(Role::WritableRoot, upper, true, Flags::NOSUID, true)]
            }
            MountOp::FileFrom { source, .. } => {
                vec![self.clone_with(Role::ReadOnlyPath, source, false, Flags::RDONLY_NOSUID, true)]
            }
            MountOp::ReadOnly(p) | MountOp::HostReadOnly(p) => {
                vec![self.clone_with(Role::ReadOnlyPath, p, true, Flags::RDONLY_NOSUID, true)]
            }
            MountOp::Bind {
                source,
                readonly,
                devices,
                ..
            } => {
                let set = Flags::bind(*readonly, *devices);
                vec![self.clone_with(Role::WritableRoot, source, true, set, true)]
            }
            // Read-only clones: the device stays usable (a read-only mount
            // does not stop device I/O) but its mode, owner and times on the
            // host cannot change.
            MountOp::Dev {
                style: DevStyle::Minimal { .. },
                ..
            } => DEVICES
                .iter()
                .map(|d| {
                    let node = Path::new("/dev").join(d);
                    self.clone_with(Role::Device, &node, false, Flags::RDONLY_NOSUID, false)
                })
                .collect(),
            // bubblewrap's: the nodes as the host mounts them.
            MountOp::Dev {
                style: DevStyle::Bubblewrap { console },
                ..
            } => DEVICES
                .iter()
                .map(|d| Path::new("/dev").join(d))
                .chain(console.clone())
                .map(|node| self.clone_tree(Role::Device, &node, false))
                .collect(),
            MountOp::Console(tty) | MountOp::TerminalName { tty, .. } => {
                vec![self.clone_with(Role::Device, tty, false, Flags::RDONLY_NOSUID, false)]
            }
            MountOp::Mask(_) => vec![self.clone_tree(Role::SocketMask, Path::new("/dev/null"), false)],
            MountOp::Proc { own: false, .. } => {
                vec![self.clone_tree(Role::HostRoot, Path::new("/proc"), true)]
            }
            _ => Vec::new(),
        }
    }

    /// An overlay, detached: its lower directories are resolved when it is
    /// made.
    pub(super) fn overlay(&mut self, lower: &[PathBuf], upper: &OverlayUpper, userxattr: bool) -> usize {
        let tree = self.trees;
        self.trees += 1;
        self.push(Step::MakeOverlay(MakeOverlay {
            tree,
            lower: lower.to_vec(),
            upper: upper.clone(),
            // In a user namespace trusted xattrs are out of reach.
            userxattr,
        }));
        tree
    }
}
