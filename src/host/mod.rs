//! Probes of the host: kernel features and the facts behind error hints.

pub mod diagnose;
pub mod mountinfo;

use serde::Serialize;

/// Which mount API the executor uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MountApi {
    /// `open_tree`, `mount_setattr(AT_RECURSIVE)`, `move_mount` (Linux ≥ 5.12).
    New,
    /// `mount(MS_BIND)` and one `MS_REMOUNT` per mount, from one mountinfo read.
    Legacy,
}

impl std::fmt::Display for MountApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::New => "new",
            Self::Legacy => "legacy",
        })
    }
}

/// Environment variable that forces the legacy mount path (for tests and for
/// comparing both paths on one kernel).
pub const FORCE_MOUNT_API_ENV: &str = "QWRAP_MOUNT_API";

/// The facts the planner needs about this host.
#[derive(Debug, Clone, Serialize)]
pub struct HostFacts {
    pub mount_api: MountApi,
    /// Why the legacy path was chosen, when it was.
    pub mount_api_reason: &'static str,
    pub uid: u32,
    pub gid: u32,
}

/// Probes the running kernel. Cheap: one failing syscall and two getters.
pub fn probe() -> Result<HostFacts, String> {
    let (mount_api, mount_api_reason) = match std::env::var(FORCE_MOUNT_API_ENV).as_deref() {
        Ok("legacy") => (MountApi::Legacy, "forced by QWRAP_MOUNT_API=legacy"),
        Ok("new") | Ok("") | Err(_) => {
            if crate::sys::mount_setattr_available() {
                (MountApi::New, "mount_setattr(2) available")
            } else {
                (MountApi::Legacy, "kernel lacks mount_setattr(2) (Linux < 5.12)")
            }
        }
        Ok(other) => {
            return Err(format!(
                "invalid {FORCE_MOUNT_API_ENV}={other:?}: expected \"new\" or \"legacy\""
            ));
        }
    };
    Ok(HostFacts {
        mount_api,
        mount_api_reason,
        uid: rustix::process::getuid().as_raw(),
        gid: rustix::process::getgid().as_raw(),
    })
}

/// Whether this process already runs inside a qwrap sandbox: `SANDBOX=qwrap`,
/// or a user namespace whose /dev has exactly a qwrap sandbox's entries.
pub fn inside_qwrap() -> bool {
    if std::env::var_os("SANDBOX").is_some_and(|v| v == "qwrap") {
        return true;
    }
    let full_map = std::fs::read_to_string("/proc/self/uid_map")
        .map(|m| m.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"])
        .unwrap_or(true);
    if full_map {
        return false;
    }
    let mut dev: Vec<String> = std::fs::read_dir("/dev")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    dev.sort();
    dev == crate::plan::dev_entries()
}
