//! The sandbox's mount layout as an ordered list of operations on the new
//! root, independent of the mount API that carries it out. Parents always come
//! before children, so every operation lands on what it should.

use super::Role;
use crate::policy::{Policy, TmpMode};
use std::path::{Path, PathBuf};

/// One mount operation on the new root. Paths are as seen inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountOp {
    /// The whole host tree, read-only, at /.
    HostRoot,
    /// A host directory, writable, at its own path.
    Writable(PathBuf),
    /// A path inside a writable root, read-only again.
    ReadOnly(PathBuf),
    /// A minimal /dev.
    Dev(PathBuf),
    /// A fresh tmpfs.
    Tmpfs { path: PathBuf, mode: u32 },
    /// /dev/null over a host Unix socket.
    Mask(PathBuf),
}

impl MountOp {
    pub fn path(&self) -> &Path {
        match self {
            MountOp::HostRoot => Path::new("/"),
            MountOp::Writable(p) | MountOp::ReadOnly(p) | MountOp::Dev(p) | MountOp::Mask(p) => p,
            MountOp::Tmpfs { path, .. } => path,
        }
    }

    /// Whether this operation puts a new, empty filesystem at its path.
    pub fn creates_filesystem(&self) -> bool {
        matches!(self, MountOp::Dev(_) | MountOp::Tmpfs { .. })
    }

    pub(super) fn role(&self) -> Role {
        match self {
            MountOp::HostRoot => Role::HostRoot,
            MountOp::ReadOnly(_) => Role::ReadOnlyPath,
            MountOp::Mask(_) => Role::SocketMask,
            _ => Role::WritableRoot,
        }
    }
}

/// The layout for a policy: host root, /dev, private /tmp, writable roots,
/// read-only paths, socket masks; then a stable sort by depth puts parents
/// first.
pub fn layout(policy: &Policy, masks: &[PathBuf]) -> Vec<MountOp> {
    let mut ops = vec![MountOp::HostRoot, MountOp::Dev(PathBuf::from("/dev"))];
    if policy.tmp == TmpMode::Private {
        ops.push(MountOp::Tmpfs {
            path: PathBuf::from("/tmp"),
            mode: 0o1777,
        });
    }
    ops.extend(
        policy
            .writable_roots
            .iter()
            .map(|r| MountOp::Writable(r.path.clone())),
    );
    ops.extend(policy.read_only.iter().map(|r| MountOp::ReadOnly(r.path.clone())));
    ops.extend(masks.iter().map(|m| MountOp::Mask(m.clone())));
    ops.sort_by_key(|op| depth(op.path()));
    ops
}

fn depth(p: &Path) -> usize {
    p.components().count()
}
