//! The one vocabulary of mount operations both front ends produce: `run`'s
//! layout (the host tree in place, roles that say why each mount is there)
//! and bwrap mode's options (an empty root, in argument order). The
//! lowerings in new_api.rs and legacy.rs (with points.rs) turn a list of them
//! into Steps. Paths are as seen inside.

use super::{OverlayUpper, Role};
use std::path::{Path, PathBuf};

/// Which /dev to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevStyle {
    /// `run`'s: a noexec tmpfs, the host nodes read-only, /dev/shm a
    /// tmpfs (of `shm_size` bytes), all read-only once made.
    Minimal { shm_size: Option<u64> },
    /// bubblewrap's `--dev`: the nodes as the host mounts them, `core`,
    /// /dev/shm a directory, and the caller's terminal (a host path) as
    /// /dev/console.
    Bubblewrap { console: Option<PathBuf> },
}

/// How a front end's operations land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// An empty root (a tmpfs over `STAGING`, the new root a directory in
    /// it), as bubblewrap builds one; else the host tree in place (`run`).
    /// The legacy path always stages.
    pub staged: bool,
    /// Every mount point made where missing, parents first, as bubblewrap
    /// makes them; else only on filesystems the plan made.
    pub ensure_points: bool,
    /// Overlays are made in a user namespace (`userxattr`).
    pub userxattr: bool,
}

impl Shape {
    /// `run`'s: the host tree in place.
    pub const RUN: Shape = Shape {
        staged: false,
        ensure_points: false,
        userxattr: true,
    };
}

/// One mount operation on the new root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountOp {
    /// The whole host tree, read-only, at /.
    HostRoot,
    /// A host directory, writable, at its own path.
    Writable(PathBuf),
    /// A path inside a writable root, read-only again.
    ReadOnly(PathBuf),
    /// A host directory shown read-only where a tmpfs would hide it: the
    /// parents of a writable root under the private /tmp.
    HostReadOnly(PathBuf),
    /// A /dev.
    Dev { path: PathBuf, style: DevStyle },
    /// A fresh tmpfs.
    Tmpfs {
        path: PathBuf,
        mode: u32,
        size: Option<u64>,
    },
    /// A cache whose host directory is empty: its layer's upper directory,
    /// writable, bound there.
    Layer { path: PathBuf, upper: PathBuf },
    /// A host file shown read-only at another path: a submodule's git
    /// config, from its copy without `core.worktree`.
    FileFrom { path: PathBuf, source: PathBuf },
    /// An overlay of host directories (lowest first): a cache (its host
    /// directory under the workspace's upper layer), or bwrap mode's
    /// `--overlay`, `--tmp-overlay`, `--ro-overlay`.
    Overlay {
        path: PathBuf,
        lower: Vec<PathBuf>,
        upper: OverlayUpper,
    },
    /// A cache inside the home: its subtree of the home's one overlay,
    /// which serves every such cache — overlayfs costs per mount, not per
    /// directory.
    InHomeLayer {
        path: PathBuf,
        layer: super::HomeOverlay,
    },
    /// /dev/null over a host Unix socket.
    Mask(PathBuf),
    /// The caller's terminal (a host path), read-only at /dev/console.
    Console(PathBuf),
    /// The caller's terminal, a host pty, read-only at its own name
    /// (`path`, /dev/pts/N) in the sandbox's devpts, whose pty `index` is
    /// claimed for it first (`Step::ClaimPty`).
    TerminalName { path: PathBuf, tty: PathBuf, index: u32 },
    /// An empty, mode-0000, read-only directory (`dir`) or file over a
    /// hidden path.
    Hidden { path: PathBuf, dir: bool },
    /// Minimal view: a host file shown read-only at its own path.
    HostFile(PathBuf),
    /// A symlink: the minimal view's merged-/usr links, bwrap mode's
    /// `--symlink`.
    Link { path: PathBuf, target: PathBuf },
    /// An empty directory: the minimal view's home, bwrap mode's `--dir`.
    Dir { path: PathBuf, mode: u32 },
    /// bwrap mode's `--bind`, `--ro-bind`, `--dev-bind`: a host file or
    /// directory (`dir`) at `path`, nosuid, nodev unless `devices`; a
    /// symlink at `path` is followed inside the new root.
    Bind {
        path: PathBuf,
        source: PathBuf,
        readonly: bool,
        devices: bool,
        dir: bool,
    },
    /// bwrap mode's `--remount-ro`.
    RemountReadOnly(PathBuf),
    /// A tmpfs of the plan's own made read-only (this mount only) once
    /// everything beneath it is in place: the listed home, `/home`.
    Seal(PathBuf),
    /// A procfs: a new one in a new PID namespace (`own`), else the host's
    /// bound; `cover` says which of its host-wide entries are made
    /// read-only over it.
    Proc {
        path: PathBuf,
        own: bool,
        cover: ProcCover,
    },
    /// bwrap mode's `--mqueue`.
    Mqueue(PathBuf),
    /// bwrap mode's `--file FD`: the fd's contents in a new file.
    File { path: PathBuf, fd: i32, mode: u32 },
    /// bwrap mode's `--bind-data`, `--ro-bind-data`: the fd's contents in a
    /// file outside the root, bound at `path`.
    BindData {
        path: PathBuf,
        fd: i32,
        readonly: bool,
        mode: u32,
    },
    /// bwrap mode's `--chmod`.
    Chmod { path: PathBuf, mode: u32 },
}

impl MountOp {
    pub fn path(&self) -> &Path {
        match self {
            MountOp::HostRoot => Path::new("/"),
            MountOp::Writable(p)
            | MountOp::ReadOnly(p)
            | MountOp::HostReadOnly(p)
            | MountOp::Mask(p)
            | MountOp::HostFile(p)
            | MountOp::RemountReadOnly(p)
            | MountOp::Seal(p)
            | MountOp::Mqueue(p) => p,
            MountOp::Dev { path, .. }
            | MountOp::Tmpfs { path, .. }
            | MountOp::Overlay { path, .. }
            | MountOp::InHomeLayer { path, .. }
            | MountOp::FileFrom { path, .. }
            | MountOp::Layer { path, .. }
            | MountOp::Hidden { path, .. }
            | MountOp::Link { path, .. }
            | MountOp::Dir { path, .. }
            | MountOp::Bind { path, .. }
            | MountOp::Proc { path, .. }
            | MountOp::File { path, .. }
            | MountOp::BindData { path, .. }
            | MountOp::Chmod { path, .. }
            | MountOp::TerminalName { path, .. } => path,
            MountOp::Console(_) => Path::new("/dev/console"),
        }
    }

    /// Whether what lies beneath this operation's path is on a filesystem
    /// the plan made (a tmpfs, or a directory made in one), so that mount
    /// points there must be made first.
    pub fn creates_filesystem(&self) -> bool {
        matches!(
            self,
            MountOp::Dev { .. } | MountOp::Tmpfs { .. } | MountOp::Dir { .. }
        )
    }

    /// Whether what lands at the path needs a directory to mount on (a
    /// file otherwise).
    pub fn mounts_on_a_directory(&self) -> bool {
        match self {
            MountOp::HostFile(_)
            | MountOp::FileFrom { .. }
            | MountOp::Console(_)
            | MountOp::TerminalName { .. }
            | MountOp::Mask(_) => false,
            MountOp::Hidden { dir, .. } => *dir,
            MountOp::Bind { dir, .. } => *dir,
            MountOp::BindData { .. } | MountOp::File { .. } | MountOp::Link { .. } => false,
            _ => true,
        }
    }

    pub(super) fn role(&self) -> Role {
        match self {
            MountOp::HostRoot => Role::HostRoot,
            MountOp::ReadOnly(_)
            | MountOp::HostReadOnly(_)
            | MountOp::HostFile(_)
            | MountOp::FileFrom { .. } => Role::ReadOnlyPath,
            MountOp::Mask(_) => Role::SocketMask,
            MountOp::Console(_) | MountOp::TerminalName { .. } => Role::Device,
            MountOp::Hidden { .. } => Role::Hidden,
            MountOp::Bind { .. }
            | MountOp::Overlay {
                upper: OverlayUpper::Tmpfs | OverlayUpper::ReadOnly,
                ..
            } => Role::Bind,
            _ => Role::WritableRoot,
        }
    }
}

/// The /proc entries made read-only over a procfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcCover {
    /// None: only uid 0 may write them, and a cover would lock the /proc
    /// mount of a sandbox nested inside out.
    None,
    /// bwrap mode's: bubblewrap's four, each left alone where access(W_OK)
    /// refuses, as bubblewrap asks.
    Bubblewrap,
    /// Every host-wide writable entry (tests/host_knobs.rs holds the list
    /// to the kernel's), left alone where the mount is read-only already.
    HostWide,
}

/// bubblewrap's entries first: its cover is their prefix.
const PROC_READ_ONLY: [&str; 11] = [
    "sys",
    "sysrq-trigger",
    "irq",
    "bus",
    "fs",
    "mtrr",
    "pressure",
    "acpi",
    "driver",
    "scsi",
    "tty",
];

impl ProcCover {
    pub fn entries(self) -> &'static [&'static str] {
        match self {
            ProcCover::None => &[],
            ProcCover::Bubblewrap => &PROC_READ_ONLY[..4],
            ProcCover::HostWide => &PROC_READ_ONLY,
        }
    }
}
