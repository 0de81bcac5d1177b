//! Whether overlaid caches can be mounted here, and which of a workspace's
//! layer slots is free.

use std::path::{Path, PathBuf};

/// How many sandboxes of one workspace keep layers of their own at once;
/// a further one gets private tmpfs caches.
pub const SLOTS: usize = 4;

/// What the planner needs to mount a workspace's caches.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CacheFacts {
    /// Why overlaid caches cannot be mounted here (None: they can).
    pub overlay_unavailable: Option<String>,
    /// The layer slot no running sandbox of this workspace holds.
    pub slot: Option<usize>,
    /// Caches whose host directory is empty (or missing) and whose layer
    /// was never overlaid: the layer alone is bound there, which costs
    /// nothing, where an overlay mount costs half a millisecond.
    pub bare: Vec<PathBuf>,
}

impl CacheFacts {
    /// No caches to mount (no layer set).
    pub fn none() -> Self {
        CacheFacts {
            overlay_unavailable: None,
            slot: None,
            bare: Vec::new(),
        }
    }
}

/// The marker a layer gets once it is an overlay's upper layer: it may then
/// hold whiteouts, and is never bound bare again.
pub const OVERLAID: &str = "overlaid";

/// Probes for a workspace's layer set (`set`) and its overlaid caches
/// (path, layer name). Cheap: uname, one statfs, a non-blocking lock
/// attempt per slot in use, and a directory read and a stat per cache.
pub fn probe(set: Option<&Path>, caches: &[(PathBuf, String)]) -> CacheFacts {
    let Some(set) = set else {
        return CacheFacts::none();
    };
    if let Some(why) = overlay_unavailable(set) {
        return CacheFacts {
            overlay_unavailable: Some(why),
            slot: None,
            bare: Vec::new(),
        };
    }
    let lock = |n: usize| set.join(format!("{n}.lock"));
    // A slot whose sandbox's command is gone (the lock names its pid) is
    // let go in a moment, once the warden has killed the leftovers: it is
    // waited for (up to a second), so that back-to-back runs keep one
    // layer; a slot in use by a running sandbox is not.
    let slot = (0..SLOTS).find(|&n| {
        slot_free(&lock(n))
            || (command_gone(&lock(n))
                && (0..200).any(|_| {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    slot_free(&lock(n))
                }))
    });
    let bare = slot.map_or_else(Vec::new, |n| {
        caches
            .iter()
            .filter(|(path, layer)| {
                let empty = std::fs::read_dir(path).map_or(true, |mut d| d.next().is_none());
                empty && !set.join(n.to_string()).join(layer).join(OVERLAID).exists()
            })
            .map(|(path, _)| path.clone())
            .collect()
    });
    CacheFacts {
        overlay_unavailable: slot
            .is_none()
            .then(|| format!("all {SLOTS} layer slots of this workspace are in use by running sandboxes")),
        slot,
        bare,
    }
}

fn overlay_unavailable(set: &Path) -> Option<String> {
    let release = rustix::system::uname().release().to_string_lossy().into_owned();
    let version = kernel_version(&release);
    // Overlayfs in a user namespace: Linux 5.11.
    if version < (5, 11) {
        return Some(format!(
            "Linux {release} has no overlayfs in a user namespace (5.11 or later)"
        ));
    }
    // The nearest existing directory: the layers are made beneath it.
    let mut at = set;
    while !at.is_dir() {
        at = at.parent()?;
    }
    if let Err(e) = rustix::fs::access(at, rustix::fs::Access::WRITE_OK) {
        return Some(format!(
            "the layer directory cannot be made under {}: {}",
            at.display(),
            crate::errno::errno_text(e.raw_os_error())
        ));
    }
    let fs = rustix::fs::statfs(at).ok()?;
    let kind = fs.f_type as u64;
    // Filesystems that keep the user.overlay.* xattrs an upper layer needs
    // in a user namespace (tmpfs since Linux 6.6).
    const KEEPS_USER_XATTRS: [u64; 6] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0x0102_1994, // tmpfs
    ];
    if !KEEPS_USER_XATTRS.contains(&kind) || (kind == 0x0102_1994 && version < (6, 6)) {
        return Some(format!(
            "{} is on a filesystem (type {kind:#x}) that does not keep overlayfs's user xattrs on this kernel",
            at.display()
        ));
    }
    None
}

/// Whether the command named in a held slot's lock has exited (reaped, or
/// a zombie): its sandbox is ending.
fn command_gone(lock: &Path) -> bool {
    let Some(pid) = std::fs::read_to_string(lock)
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
    else {
        return false;
    };
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => true,
    }
}

/// Whether no sandbox holds this slot's lock (a missing lock file: free).
pub fn slot_free(lock: &Path) -> bool {
    use rustix::fs::{FlockOperation, Mode, OFlags};
    match rustix::fs::open(lock, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_ok(),
        Err(_) => true,
    }
}

/// `(major, minor)` from a release string such as `6.1.0-18-amd64`.
pub fn kernel_version(release: &str) -> (u32, u32) {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(kernel_version("6.1.0-18-amd64"), (6, 1));
        assert_eq!(kernel_version("5.10.209"), (5, 10));
        assert_eq!(kernel_version("6.18"), (6, 18));
        assert_eq!(kernel_version("junk"), (0, 0));
    }

    #[test]
    fn a_held_slot_is_not_free() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("0.lock");
        assert!(slot_free(&lock), "a missing lock file is free");
        let fd = std::fs::File::create(&lock).unwrap();
        assert!(slot_free(&lock));
        rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive).unwrap();
        assert!(!slot_free(&lock));
        drop(fd);
        assert!(slot_free(&lock));
    }
}
