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
    /// The caches that one overlay of the home serves (overlayfs's cost is
    /// per mount, about a millisecond at its creation, not per directory):
    /// inside the home and on the home's own mount (a cache that is a
    /// mount of its own, or lies elsewhere, gets an overlay of its own).
    pub in_home: Vec<PathBuf>,
    /// `--home overlay`: the host's mounts beneath the home (read from the
    /// mount table, in this mode only). In a user namespace overlayfs
    /// refuses a lower layer with mounts beneath it (it would hide them):
    /// any there, and the home stays read-only.
    pub whole_home: Option<Vec<PathBuf>>,
}

/// What the planner asks of the host for a workspace's caches.
#[derive(Debug, Clone, Default)]
pub struct CacheRequest<'a> {
    /// The workspace's layer set (None: nothing is overlaid).
    pub set: Option<&'a Path>,
    /// The caches to overlay: path and layer name.
    pub caches: Vec<(PathBuf, String)>,
    /// The home directory, one overlay of which serves the caches in it.
    pub home: Option<&'a Path>,
    /// `--home overlay`: the whole home is overlaid.
    pub whole_home: bool,
}

impl CacheFacts {
    /// No caches to mount (no layer set).
    pub fn none() -> Self {
        CacheFacts {
            overlay_unavailable: None,
            slot: None,
            bare: Vec::new(),
            in_home: Vec::new(),
            whole_home: None,
        }
    }
}

/// The layer of the one overlay of the home directory: `%` cannot begin a
/// cache's layer name (`layer_name` escapes it), so no cache's layer is
/// named alike.
pub const HOME_LAYER: &str = "%home";

/// The marker a layer gets once it is an overlay's upper layer: it may then
/// hold whiteouts, and is never bound bare again.
pub const OVERLAID: &str = "overlaid";

/// Probes for a workspace's layer set (`set`) and its overlaid caches
/// (path, layer name); `home`: the home directory, whose one overlay
/// serves the caches inside it. Cheap: uname, one statfs, a non-blocking
/// lock attempt per slot in use, and a directory read and a statx per
/// cache.
pub fn probe(req: &CacheRequest) -> CacheFacts {
    let (caches, home) = (&req.caches, req.home);
    let Some(set) = req.set else {
        return CacheFacts::none();
    };
    if let Some(why) = overlay_unavailable(set) {
        return CacheFacts {
            overlay_unavailable: Some(why),
            ..CacheFacts::none()
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
                && (0..4000).any(|_| {
                    // Checked often: the slot is usually let go within a
                    // millisecond, and every run started right after
                    // another waits for it.
                    std::thread::sleep(std::time::Duration::from_micros(250));
                    slot_free(&lock(n))
                }))
    });
    let in_home: Vec<PathBuf> = home
        .and_then(|h| Some((h, mount_id(h)?)))
        .map(|(h, id)| {
            caches
                .iter()
                .map(|(p, _)| p)
                .filter(|p| p.starts_with(h) && *p != h && mount_id(nearest_existing(p)) == Some(id))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let empty = |p: &Path| std::fs::read_dir(p).map_or(true, |mut d| d.next().is_none());
    let bare = slot.map_or_else(Vec::new, |n| {
        let never_overlaid = |layer: &str| !set.join(n.to_string()).join(layer).join(OVERLAID).exists();
        let mut bare: Vec<PathBuf> = caches
            .iter()
            .filter(|(path, layer)| !in_home.contains(path) && empty(path) && never_overlaid(layer))
            .map(|(path, _)| path.clone())
            .collect();
        // The home's caches are bound bare only all together: once one of
        // them needs the overlay, it serves them all at no further cost.
        if !req.whole_home && in_home.iter().all(|p| empty(p)) && never_overlaid(HOME_LAYER) {
            bare.extend(in_home.iter().cloned());
        }
        bare
    });
    CacheFacts {
        overlay_unavailable: slot
            .is_none()
            .then(|| format!("all {SLOTS} layer slots of this workspace are in use by running sandboxes")),
        slot,
        bare,
        in_home,
        whole_home: req
            .whole_home
            .then(|| home.map(mounts_beneath).unwrap_or_default()),
    }
}

/// The mount points strictly beneath `dir`, the topmost of each subtree.
/// A table that cannot be read or parsed counts as one there is (the
/// overlay would fail, or hide it).
pub(super) fn mounts_beneath(dir: &Path) -> Vec<PathBuf> {
    let table = std::fs::read("/proc/self/mountinfo").map_err(|_| ());
    let Ok(entries) = table.and_then(|t| super::mountinfo::parse(&t).map_err(|_| ())) else {
        return vec![PathBuf::from("/proc/self/mountinfo (unreadable)")];
    };
    let mut v: Vec<PathBuf> = entries
        .into_iter()
        .map(|m| m.mount_point)
        .filter(|p| p.starts_with(dir) && p != dir)
        .collect();
    v.sort();
    v.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for p in v {
        if !kept.iter().any(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    kept
}

/// The id of the mount `p` is on (statx, Linux 5.8); None where the kernel
/// does not say.
fn mount_id(p: &Path) -> Option<u64> {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    let st = statx(CWD, p, AtFlags::empty(), StatxFlags::MNT_ID).ok()?;
    (st.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(st.stx_mnt_id)
}

/// `p` or its nearest existing ancestor: a missing cache is made there.
fn nearest_existing(mut p: &Path) -> &Path {
    while !p.exists() {
        match p.parent() {
            Some(up) => p = up,
            None => break,
        }
    }
    p
}

pub(super) fn overlay_unavailable(set: &Path) -> Option<String> {
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
pub fn command_gone(lock: &Path) -> bool {
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
