//! `--review`: whether a workspace's trees can be overlaid here, and the
//! id the next layer gets.

use std::path::{Path, PathBuf};

/// What the planner needs to keep a run's changes in a layer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReviewFacts {
    /// Why the trees cannot be overlaid here (None: they can).
    pub unavailable: Option<String>,
    /// Host mounts beneath the trees: overlayfs in a user namespace
    /// refuses a lower layer with mounts beneath it (it would hide them).
    #[serde(serialize_with = "crate::lossy::paths")]
    pub mounts_beneath: Vec<PathBuf>,
    /// The next layer's id: an idle layer's (one an earlier run left
    /// empty: no record, its lock free), else one past the highest in the
    /// set. A run that takes it meanwhile makes this one's `mkdir` fail
    /// (EEXIST) or its lock (EWOULDBLOCK), and run probes again.
    pub id: u32,
    /// `id` is an idle layer's, its directories there already.
    pub idle: bool,
    /// This boot's id: a layer written out by no sync (its overlay is
    /// `volatile`) is whole only while the host has not restarted.
    pub boot: String,
}

/// Probes for a workspace's layer set `set` and the `trees` it overlays:
/// the kernel and the set's filesystem (as for the caches), the mount
/// table (read once) and the set's directory.
pub fn probe(set: &Path, trees: &[PathBuf]) -> ReviewFacts {
    let mounts_beneath: Vec<PathBuf> = trees
        .iter()
        .flat_map(|t| super::caches::mounts_beneath(t))
        .collect();
    let (id, idle) = match idle_layer(set) {
        Some(id) => (id, true),
        None => (next_id(set), false),
    };
    ReviewFacts {
        unavailable: super::caches::overlay_unavailable(set),
        mounts_beneath,
        id,
        idle,
        boot: boot_id(),
    }
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`), empty where it
/// cannot be read.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The lowest-numbered idle layer of a set: no record (`info`), and its
/// lock free. Reused, it costs no directory made or removed.
pub fn idle_layer(set: &Path) -> Option<u32> {
    let mut ids: Vec<u32> = std::fs::read_dir(set)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids.into_iter().find(|id| {
        let dir = set.join(id.to_string());
        !dir.join("info").exists() && dir.join("lock").exists() && super::caches::slot_free(&dir.join("lock"))
    })
}

/// One past the highest numbered entry of `set` (1 for an empty or missing
/// set).
pub fn next_id(set: &Path) -> u32 {
    std::fs::read_dir(set)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
        .saturating_add(1)
}

/// `qwrap review` as an ordinary user: a user namespace of its own, the
/// caller's uid and gid mapped to themselves, whose capabilities reach
/// only what the caller owns. So a file the command made unreadable to
/// itself in its layer (mode 000, a directory without search) is read and
/// applied with its mode, as the owner could after a chmod; what others
/// own stays as the caller sees it. Where no user namespace can be made,
/// review goes on as the caller (such a file then fails with EACCES).
pub fn as_owner() -> Result<(), rustix::io::Errno> {
    use crate::sys::kernel as k;
    use rustix::fs::{Mode, OFlags};
    if rustix::process::geteuid().is_root() {
        return Ok(());
    }
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    crate::sys::unshare_namespaces(rustix::thread::UnshareFlags::NEWUSER)?;
    let map = |file: &str, text: String| {
        k::open(file, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())
            .and_then(|fd| k::write(&fd, text.as_bytes()))
    };
    map("/proc/self/setgroups", "deny".into())?;
    map("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    map("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_highest() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(next_id(&d.path().join("missing")), 1);
        assert_eq!(next_id(d.path()), 1);
        for n in ["1", "7", "x", "3.lock"] {
            std::fs::create_dir(d.path().join(n)).unwrap();
        }
        assert_eq!(next_id(d.path()), 8);
        assert_eq!(idle_layer(d.path()), None);
        std::fs::write(d.path().join("7/lock"), "").unwrap();
        assert_eq!(idle_layer(d.path()), Some(7));
        std::fs::write(d.path().join("7/info"), "").unwrap();
        assert_eq!(idle_layer(d.path()), None);
    }
}
