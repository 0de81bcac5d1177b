//! The values steps carry: mount flags, overlay layers, identity maps,
//! namespaces, the roles of cloned trees, the
//! egress proxy's configuration.

use serde::Serialize;
use std::path::PathBuf;

/// Index of a detached mount tree (an `open_tree` fd) held by the executor.
pub type TreeId = usize;

/// Where an overlay's changes go (bwrap mode's overlays).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OverlayUpper {
    /// Into a host directory, with its work directory beside it.
    Dirs {
        #[serde(serialize_with = "crate::lossy::path")]
        upper: PathBuf,
        #[serde(serialize_with = "crate::lossy::path")]
        work: PathBuf,
    },
    /// Into a host directory, `volatile`: no sync of the upper layer's
    /// filesystem, at unmount or asked from inside (`--review`'s layer:
    /// the warden writes it out when the command exits).
    Volatile {
        #[serde(serialize_with = "crate::lossy::path")]
        upper: PathBuf,
        #[serde(serialize_with = "crate::lossy::path")]
        work: PathBuf,
    },
    /// Into a tmpfs that ends with the sandbox.
    Tmpfs,
    /// Nowhere: the overlay is read-only.
    ReadOnly,
}

impl OverlayUpper {
    /// The same layer with its directories' paths mapped (`f`), as seen
    /// from elsewhere (the legacy path's old root).
    pub(super) fn map_dirs(&self, f: impl Fn(&std::path::Path) -> PathBuf) -> OverlayUpper {
        match self {
            OverlayUpper::Dirs { upper, work } => OverlayUpper::Dirs {
                upper: f(upper),
                work: f(work),
            },
            OverlayUpper::Volatile { upper, work } => OverlayUpper::Volatile {
                upper: f(upper),
                work: f(work),
            },
            other => other.clone(),
        }
    }
}

/// One cache's tree cloned from the home's overlay (`HomeCaches`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OverlayPart {
    pub tree: TreeId,
    /// The cache's path: inside the home, where the overlay lies then.
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
}

/// The proxy the warden serves with `--network proxied`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Egress {
    pub allow: crate::egress::AllowList,
    /// Opened (append) before the warden starts.
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub log: Option<PathBuf>,
    /// Each refusal said once per destination on qwrap's stderr (not with
    /// --quiet).
    pub say: bool,
}

/// What the warden keeps of the sandbox's limits (plan/limits.rs): the
/// groups to empty and remove once it ends, what to watch and say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitWatch {
    /// The sandbox's cgroups (one on v2, one per hierarchy on v1).
    #[serde(serialize_with = "crate::lossy::paths")]
    pub groups: Vec<PathBuf>,
    /// cgroup v2 (memory.oom.group kills the tree, cgroup.kill ends it)
    /// or v1 (the warden kills the group at the first OOM kill).
    pub v2: bool,
    /// `--memory`: the bytes, and the group whose files tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Watched>,
    /// `--max-processes`: the tasks asked for, and the group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<Watched>,
    /// `--time-limit`, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_ms: Option<u64>,
    /// One line on qwrap's stderr for a limit reached (not with --quiet).
    pub say: bool,
}

/// A limit and the group whose files say whether it was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Watched {
    pub limit: u64,
    #[serde(serialize_with = "crate::lossy::path")]
    pub group: PathBuf,
}

/// Which identity map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IdMap {
    Uid,
    Gid,
}

/// What happens to the ambient set when capabilities are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ambient {
    /// Only what is kept stays (`run`: nothing).
    Lower,
    /// What is kept is made inheritable and raised, so that it survives
    /// exec as non-root (bwrap mode's `--cap-add`/`--cap-drop`).
    Raise,
    /// Each kept capability offered to the ambient set and refusals
    /// ignored, the inheritable set left as it is: bubblewrap's rule for a
    /// root caller, whose inheritable capabilities become ambient.
    Offer,
}

/// Per-mount flags, as `MS_*` for mount(2) or `MOUNT_ATTR_*` for mount_setattr(2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Flags {
    pub rdonly: bool,
    pub nosuid: bool,
    pub nodev: bool,
    pub noexec: bool,
}

impl Flags {
    pub const NONE: Flags = Flags {
        rdonly: false,
        nosuid: false,
        nodev: false,
        noexec: false,
    };

    pub const NOSUID: Flags = Flags {
        rdonly: false,
        nosuid: true,
        nodev: false,
        noexec: false,
    };

    pub const RDONLY_NOSUID: Flags = Flags {
        rdonly: true,
        nosuid: true,
        nodev: false,
        noexec: false,
    };

    /// A device node bound read-only: usable, its metadata unchangeable.
    /// NOEXEC too, so that a host /dev mounted noexec (a locked flag in a
    /// user namespace) can be remounted.
    pub const DEVICE_NODE: Flags = Flags {
        rdonly: true,
        nosuid: true,
        nodev: false,
        noexec: true,
    };

    /// A file shown read-only (a submodule's config, `--ro-bind-data`).
    pub const RDONLY_NOSUID_NODEV: Flags = Flags {
        rdonly: true,
        nosuid: true,
        nodev: true,
        noexec: false,
    };

    /// bubblewrap's bind: nosuid, nodev unless `--dev-bind`.
    pub fn bind(readonly: bool, devices: bool) -> Flags {
        Flags {
            rdonly: readonly,
            nosuid: true,
            nodev: !devices,
            noexec: false,
        }
    }

    /// What every tmpfs qwrap mounts carries.
    pub const NOSUID_NODEV: Flags = Flags {
        rdonly: false,
        nosuid: true,
        nodev: true,
        noexec: false,
    };

    pub(super) fn names(&self, prefix: &str) -> Vec<String> {
        [
            (self.rdonly, "RDONLY"),
            (self.nosuid, "NOSUID"),
            (self.nodev, "NODEV"),
            (self.noexec, "NOEXEC"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| format!("{prefix}{n}"))
        .collect()
    }
}

/// A path as a step prints it: quoted, exactly.
pub(super) fn q(p: &std::path::Path) -> String {
    format!("{:?}", p.as_os_str())
}

/// Flag names joined with `|`, or `0`.
pub(super) fn join_flags(parts: Vec<String>) -> String {
    if parts.is_empty() {
        "0".into()
    } else {
        parts.join("|")
    }
}

/// The child of a fork after DieWithParent dies with its parent too.
pub(super) const DYING_CHILD: &str =
    " (after die-with-parent: prctl(PR_SET_PDEATHSIG, SIGKILL) in the child)";

/// A child that goes on while its monitor writes reports first waits for it.
pub(super) const WAIT_FOR_MONITOR: &str =
    " (with --info-fd or --json-status-fd: then read(go pipe) until the monitor has read the namespace ids)";

/// What precedes every fork: the kernel's thread count, which must be one.
pub(super) const ONE_THREAD: &str = "openat(\"/proc/self/stat\"); read() = one thread; ";

/// How the warden and the reaper are started: one copy of the address
/// space, no child of the command (qwrap-sys: spawn.rs).
pub(super) const DETACHED: &str = "mmap(8 MiB stack); mprotect(its lowest page, PROT_NONE); \
     clone(CLONE_VM|CLONE_VFORK|CLONE_FILES) = an intermediate on that stack, in which clone(CLONE_PIDFD) = ";

/// `DETACHED` for a process that shares the caller's memory (the reaper).
pub(super) const DETACHED_LIGHT: &str = "mmap(8 MiB stack); mprotect(its lowest page, PROT_NONE); \
     clone(CLONE_VM|CLONE_VFORK|CLONE_FILES) = an intermediate on that stack, in which clone(CLONE_VM|CLONE_PIDFD) = ";

/// What follows `DETACHED`'s process, back in the caller.
pub(super) const DETACHED_END: &str =
    "; the intermediate exits (wait4), its pidfd is here; munmap(the stack)";

/// What a cloned tree is for: it explains the step, and a `Bind` follows
/// a symlink at its target as bubblewrap's binds do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    HostRoot,
    WritableRoot,
    ReadOnlyPath,
    Device,
    /// /dev/null over a host Unix socket, so that `connect()` is refused.
    SocketMask,
    /// The device an inherited descriptor refers to, bound read-only over
    /// itself so that the descriptor can be opened again through it.
    InheritedDevice,
    /// An empty, mode-0000 file or directory over a hidden path.
    Hidden,
    /// bwrap mode's `--bind`/`--ro-bind`: its destination may be a symlink
    /// made by `--symlink`, followed as `mount(2)` follows it.
    Bind,
}

impl Role {
    pub(super) fn noun(self) -> &'static str {
        match self {
            Self::HostRoot => "the host tree",
            Self::WritableRoot => "writable root",
            Self::ReadOnlyPath => "read-only path",
            Self::Device => "host device",
            Self::SocketMask => "socket mask",
            Self::InheritedDevice => "inherited descriptor's device",
            Self::Hidden => "hidden path",
            Self::Bind => "bind",
        }
    }
}

/// Namespaces made by `CloneMonitor` or `Unshare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Namespaces {
    pub user: bool,
    pub pid: bool,
    pub net: bool,
    pub ipc: bool,
    pub uts: bool,
    pub cgroup: bool,
}

impl Namespaces {
    /// The `CLONE_NEW*` flags, the mount namespace always included.
    pub fn clone_flags(&self) -> u64 {
        let mut f = libc::CLONE_NEWNS as u64;
        for (on, flag) in [
            (self.user, libc::CLONE_NEWUSER),
            (self.pid, libc::CLONE_NEWPID),
            (self.net, libc::CLONE_NEWNET),
            (self.ipc, libc::CLONE_NEWIPC),
            (self.uts, libc::CLONE_NEWUTS),
            (self.cgroup, libc::CLONE_NEWCGROUP),
        ] {
            if on {
                f |= flag as u64;
            }
        }
        f
    }

    pub(super) fn names(&self) -> String {
        let mut v = Vec::new();
        for (on, n) in [
            (self.user, "CLONE_NEWUSER"),
            (true, "CLONE_NEWNS"),
            (self.pid, "CLONE_NEWPID"),
            (self.net, "CLONE_NEWNET"),
            (self.ipc, "CLONE_NEWIPC"),
            (self.uts, "CLONE_NEWUTS"),
            (self.cgroup, "CLONE_NEWCGROUP"),
        ] {
            if on {
                v.push(n);
            }
        }
        v.join("|")
    }
}
