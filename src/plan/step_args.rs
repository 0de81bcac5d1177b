//! The values steps carry: mount flags, overlay layers, identity maps, the
//! egress proxy's configuration.

use serde::Serialize;
use std::path::PathBuf;

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
    /// Into a tmpfs that ends with the sandbox.
    Tmpfs,
    /// Nowhere: the overlay is read-only.
    ReadOnly,
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
