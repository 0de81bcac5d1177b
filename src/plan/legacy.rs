//! The legacy mount path (`mount(2)`, Linux < 5.12, and the minimal view on
//! every kernel), for both front ends: pivot into a staging tmpfs, assemble
//! the new root there with binds from the old one, remount with the flags
//! each mount needs from one mountinfo read.

use super::{
    Builder, DEVICES, DevStyle, Flags, LEGACY_NEW_ROOT, LEGACY_OLD_ROOT, MountOp, ProcCover, Role, STAGING,
    Shape, Step, under,
};
use crate::plan::{
    AttachTree, BindMount, ClaimPty, MakeMountPoint, MakeTreePrivate, MountProc, MountTmpfs, PivotRoot,
    ReadOnlyInPlace, Remount, RemountTree,
};
use std::path::{Path, PathBuf};

impl Builder {
    /// Legacy API: pivot into a staging tmpfs that holds the host tree at
    /// /oldroot, bind from there into /newroot. Returns the new root, which
    /// the caller enters once its other steps are in.
    pub(super) fn mounts_legacy(&mut self, ops: &[MountOp], shape: Shape) -> PathBuf {
        let new_root = self.pivot_to_staging(ops);
        let old_root = PathBuf::from(LEGACY_OLD_ROOT);
        let host = |p: &Path| under(&old_root, p);
        let hidden = self.hidden_source(ops);
        let in_home = self.split_home_overlay(ops, &host, shape.userxattr);
        let pv = Pivoted {
            table: under(&old_root, Path::new("/proc/self/mountinfo")),
            old_root,
            hidden,
            in_home,
            userxattr: shape.userxattr,
        };
        for (i, op) in ops.iter().enumerate() {
            let target = under(&new_root, op.path());
            if shape.ensure_points {
                self.ensure_point(op, &target, &new_root);
            } else {
                self.make_mount_point(ops, i, &new_root);
            }
            self.legacy_op(&pv, i, op, target);
        }
        for op in ops {
            if let MountOp::Dev {
                path,
                style: DevStyle::Minimal { .. },
            } = op
            {
                self.push(Step::Remount(Remount {
                    target: under(&new_root, path),
                    flags: Flags {
                        rdonly: true,
                        nosuid: true,
                        nodev: true,
                        noexec: true,
                    },
                }));
            }
        }
        new_root
    }

    /// The staging tmpfs pivoted into, the host's tree at its old root;
    /// returns the new root to build.
    fn pivot_to_staging(&mut self, ops: &[MountOp]) -> PathBuf {
        let staging = PathBuf::from(STAGING);
        let new_root = PathBuf::from(LEGACY_NEW_ROOT);
        let old_root = PathBuf::from(LEGACY_OLD_ROOT);
        self.push(Step::MountTmpfs(MountTmpfs {
            target: staging.clone(),
            flags: Flags::NOSUID_NODEV,
            mode: 0o755,
            size: None,
        }));
        for dir in [&new_root, &old_root] {
            self.push(Step::MakeMountPoint(MakeMountPoint {
                path: under(&staging, dir),
                dir: true,
                mode: 0o755,
                if_missing: false,
            }));
        }
        self.push(Step::PivotRoot(PivotRoot {
            new_root: staging.clone(),
            put_old: under(&staging, &old_root),
        }));
        if !ops.iter().any(|op| op.path() == Path::new("/")) {
            // Nothing mounts the root itself (bwrap mode): a mount of its
            // own, so that it can be pivoted into.
            self.push(Step::BindMount(BindMount {
                role: Role::HostRoot,
                source: new_root.clone(),
                target: new_root.clone(),
                recursive: false,
            }));
        }
        new_root
    }

    /// One operation, from the host's tree under the old root.
    fn legacy_op(&mut self, pv: &Pivoted, i: usize, op: &MountOp, target: PathBuf) {
        match op {
            MountOp::HostRoot => self.bind_tree(
                pv,
                Role::HostRoot,
                pv.old_root.clone(),
                pv.old_root.clone(),
                Flags::RDONLY_NOSUID,
                &target,
            ),
            MountOp::Writable(p) | MountOp::Layer { upper: p, .. } => {
                self.push(Step::BindMount(BindMount {
                    role: Role::WritableRoot,
                    source: pv.host(p),
                    target: target.clone(),
                    recursive: true,
                }));
                self.push(Step::MakeTreePrivate(MakeTreePrivate { target }));
            }
            MountOp::Bind {
                source,
                readonly,
                devices,
                ..
            } => self.bind_tree(
                pv,
                Role::Bind,
                pv.host(source),
                pv.host(source),
                Flags::bind(*readonly, *devices),
                &target,
            ),
            MountOp::InHomeLayer { .. } => {
                if let Some(&tree) = pv.in_home.get(&i) {
                    self.push(Step::AttachTree(AttachTree {
                        tree,
                        role: op.role(),
                        target,
                    }));
                }
            }
            MountOp::Overlay { lower, upper, .. } => {
                // After the pivot every host path is under the old root.
                let upper = upper.map_dirs(|p| pv.host(p));
                let lower: Vec<PathBuf> = lower.iter().map(|l| pv.host(l)).collect();
                let tree = self.overlay(&lower, &upper, pv.userxattr);
                self.push(Step::AttachTree(AttachTree {
                    tree,
                    role: op.role(),
                    target,
                }));
            }
            MountOp::HostFile(_)
            | MountOp::FileFrom { .. }
            | MountOp::Console(_)
            | MountOp::TerminalName { .. }
            | MountOp::Mask(_) => self.legacy_file(pv, op, target),
            // A read-only path already holds the host's content in the
            // new root; a host directory under the tmpfs does not.
            MountOp::ReadOnly(p) => self.bind_tree(
                pv,
                Role::ReadOnlyPath,
                target.clone(),
                pv.host(p),
                Flags::RDONLY_NOSUID,
                &target,
            ),
            MountOp::HostReadOnly(p) => self.bind_tree(
                pv,
                Role::ReadOnlyPath,
                pv.host(p),
                pv.host(p),
                Flags::RDONLY_NOSUID,
                &target,
            ),
            MountOp::Dev { style, .. } => self.legacy_dev(pv, style, &target),
            MountOp::Proc { own, cover, .. } => self.legacy_proc(pv, *own, *cover, &target),
            MountOp::Seal(_) => self.push(Step::Remount(Remount {
                target,
                flags: Flags::RDONLY_NOSUID_NODEV,
            })),
            MountOp::RemountReadOnly(_) => self.push(Step::RemountTree(RemountTree {
                target: target.clone(),
                source: target,
                table: pv.table.clone(),
                set: Flags {
                    rdonly: true,
                    ..Flags::NONE
                },
                recursive: false,
            })),
            // After the pivot the staging tmpfs is the root: `--bind-data`
            // files live in it, beside the new root.
            _ => self.lower_common(op, target, pv.hidden, Path::new("/")),
        }
    }

    /// A bind of a tree (`from`, whose mounts the table lists under
    /// `listed`), `set` added to each of its mounts.
    fn bind_tree(
        &mut self,
        pv: &Pivoted,
        role: Role,
        from: PathBuf,
        listed: PathBuf,
        set: Flags,
        target: &Path,
    ) {
        self.push(Step::BindMount(BindMount {
            role,
            source: from,
            target: target.to_path_buf(),
            recursive: true,
        }));
        if matches!(role, Role::HostRoot | Role::Bind) {
            self.push(Step::MakeTreePrivate(MakeTreePrivate {
                target: target.to_path_buf(),
            }));
        }
        self.push(Step::RemountTree(RemountTree {
            target: target.to_path_buf(),
            source: listed,
            table: pv.table.clone(),
            set,
            recursive: true,
        }));
    }

    /// A file bound over its mount point: a host file read-only, a
    /// file qwrap wrote, the terminal, a socket's mask.
    fn legacy_file(&mut self, pv: &Pivoted, op: &MountOp, target: PathBuf) {
        match op {
            MountOp::HostFile(p) => {
                self.push(Step::BindMount(BindMount {
                    role: Role::ReadOnlyPath,
                    source: pv.host(p),
                    target: target.clone(),
                    recursive: false,
                }));
                self.push(Step::RemountTree(RemountTree {
                    target,
                    source: pv.host(p),
                    table: pv.table.clone(),
                    set: Flags::RDONLY_NOSUID,
                    recursive: false,
                }));
            }
            MountOp::FileFrom { source: p, .. } => {
                self.push(Step::BindMount(BindMount {
                    role: Role::ReadOnlyPath,
                    source: pv.host(p),
                    target: target.clone(),
                    recursive: false,
                }));
                self.push(Step::Remount(Remount {
                    target,
                    flags: Flags::RDONLY_NOSUID_NODEV,
                }));
            }
            MountOp::Console(tty) | MountOp::TerminalName { tty, .. } => {
                if let MountOp::TerminalName { index, .. } = op {
                    self.push(Step::ClaimPty(ClaimPty {
                        target: target.clone(),
                        index: *index,
                    }));
                }
                self.push(Step::BindMount(BindMount {
                    role: Role::Device,
                    source: pv.host(tty),
                    target: target.clone(),
                    recursive: false,
                }));
                self.push(Step::Remount(Remount {
                    target,
                    flags: Flags::DEVICE_NODE,
                }));
            }
            MountOp::Mask(_) => self.push(Step::BindMount(BindMount {
                role: Role::SocketMask,
                source: pv.host(Path::new("/dev/null")),
                target,
                recursive: false,
            })),
            _ => {}
        }
    }

    /// /dev's nodes, bound from the host's.
    fn legacy_dev(&mut self, pv: &Pivoted, style: &DevStyle, target: &Path) {
        let minimal = matches!(style, DevStyle::Minimal { .. });
        let console = match style {
            DevStyle::Bubblewrap { console } => console.clone(),
            DevStyle::Minimal { .. } => None,
        };
        self.lower_dev(style, target, |b, node, dest| {
            let source = match DEVICES.get(node) {
                Some(d) => pv.host(&Path::new("/dev").join(d)),
                None => pv.host(console.as_deref().unwrap_or(Path::new("/dev/console"))),
            };
            b.push(Step::BindMount(BindMount {
                role: Role::Device,
                source,
                target: dest.clone(),
                recursive: false,
            }));
            // run's nodes read-only; bubblewrap's as the host
            // mounts them.
            if minimal {
                b.push(Step::Remount(Remount {
                    target: dest,
                    flags: Flags::DEVICE_NODE,
                }));
            }
        });
    }

    /// /proc: the PID namespace's own, or the host's bound; then what its
    /// cover makes read-only in place.
    fn legacy_proc(&mut self, pv: &Pivoted, own: bool, cover: ProcCover, target: &Path) {
        if own {
            self.push(Step::MountProc(MountProc {
                target: target.to_path_buf(),
            }));
        } else {
            self.push(Step::BindMount(BindMount {
                role: Role::HostRoot,
                source: pv.host(Path::new("/proc")),
                target: target.to_path_buf(),
                recursive: true,
            }));
        }
        for sub in cover.entries() {
            self.push(Step::ReadOnlyInPlace(ReadOnlyInPlace {
                path: target.join(sub),
                legacy: true,
                bubblewrap: cover == ProcCover::Bubblewrap,
            }));
        }
    }
}

/// What each operation's lowering reads after the pivot: where the host's
/// tree and its mount table are, the hidden paths' source, the trees the
/// home's overlay gave its caches.
struct Pivoted {
    old_root: PathBuf,
    table: PathBuf,
    hidden: Option<super::TreeId>,
    in_home: std::collections::HashMap<usize, super::TreeId>,
    userxattr: bool,
}

impl Pivoted {
    fn host(&self, p: &Path) -> PathBuf {
        under(&self.old_root, p)
    }
}
