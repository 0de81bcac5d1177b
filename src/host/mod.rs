//! Probes of the host: kernel features and the facts behind error hints.

pub mod caches;
pub mod cgroups;
pub mod diagnose;
mod fds;
pub mod landlock_only;
pub mod mountinfo;
pub mod review;
mod socket_inventory;
pub mod unix_sockets;

pub use fds::{FdKind, InheritedFd};
pub use socket_inventory::{Inventory as SocketInventory, Unresolved as UnresolvedSocket};

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

/// Test-only switch: pretend the kernel offers at most this Landlock ABI.
/// Reports say so wherever it is in force. Read only by test builds (cargo
/// feature `fault-injection`): a release build ignores it, so no variable
/// can switch a layer off.
pub const FORCE_LANDLOCK_ABI_ENV: &str = "QWRAP_TEST_LANDLOCK_ABI";

/// The facts the planner needs about this host.
#[derive(Debug, Clone, Serialize)]
pub struct HostFacts {
    pub mount_api: MountApi,
    /// Why the legacy path was chosen, when it was.
    pub mount_api_reason: &'static str,
    pub uid: u32,
    pub gid: u32,
    /// The Landlock ABI to use (0: none).
    pub landlock_abi: u32,
    /// Set when the ABI was capped by the test-only switch.
    pub landlock_abi_capped: bool,
    /// Bound pathname Unix sockets on the host, found by inode.
    pub unix_sockets: SocketInventory,
    /// The descriptors inherited without close-on-exec.
    pub fds: Vec<InheritedFd>,
    /// Whether and where the workspace's caches can be overlaid.
    pub caches: caches::CacheFacts,
    /// The host's memory in bytes (sysinfo's total RAM): what a tmpfs size
    /// given as a share of it comes to.
    pub mem_total: u64,
    /// Why no pty can be opened here, where a terminal is on fds 0-2 (an
    /// initramfs or a console without devpts); None where one can. Filled
    /// by the caller: `run` knows from its own try (`no_pty_text`), the
    /// reports ask (`pty_refused`).
    pub no_pty: Option<String>,
    /// The caller's controlling terminal (/proc/self/stat's tty_nr, and
    /// whether the caller leads its session).
    pub ctty: Ctty,
    /// qwrap is PID 1 of its PID namespace (a container's first process):
    /// its end would kill every process in it.
    pub pid_one: bool,
    /// What `--isolation landlock` (or `auto`) needs: filled by the
    /// caller once it knows the policy asks for it.
    #[serde(skip)]
    pub landlock_only: landlock_only::Facts,
    /// The running kernel's version, `(major, minor)`.
    #[serde(skip)]
    pub kernel: (u32, u32),
    /// The caller's cgroups: filled by the caller where a limit needs a
    /// group of the sandbox's own, and for the reports.
    #[serde(skip)]
    pub cgroups: Option<cgroups::CgroupFacts>,
    /// `--review`: whether the workspace can be overlaid here, and the
    /// next layer's id (filled by the caller, in that mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<review::ReviewFacts>,
}

/// A setting in the environment that the host probe cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("invalid {FORCE_MOUNT_API_ENV}={0:?}: expected \"new\" or \"legacy\"")]
    MountApi(String),
    #[error("invalid {FORCE_LANDLOCK_ABI_ENV}={0:?}: expected a number")]
    LandlockCap(String),
}

/// Probes the host: the kernel's mount API and Landlock ABI, the
/// inherited descriptors, the bound Unix sockets (a netlink dump), the
/// caches' filesystems and layer slot (`caches`: what the policy overlays).
pub fn probe(caches: &caches::CacheRequest) -> Result<HostFacts, ProbeError> {
    let (mount_api, mount_api_reason) = match std::env::var(FORCE_MOUNT_API_ENV).as_deref() {
        Ok("legacy") => (MountApi::Legacy, "forced by QWRAP_MOUNT_API=legacy"),
        Ok("new") | Ok("") | Err(_) => {
            if crate::sys::mount_setattr_available() {
                (MountApi::New, "mount_setattr(2) available")
            } else {
                (MountApi::Legacy, "kernel lacks mount_setattr(2) (Linux < 5.12)")
            }
        }
        Ok(other) => return Err(ProbeError::MountApi(other.into())),
    };
    let kernel_abi = crate::sys::landlock_abi();
    let cap = landlock_abi_cap()?;
    let landlock_abi = cap.map_or(kernel_abi, |c| c.min(kernel_abi));
    Ok(HostFacts {
        mount_api,
        mount_api_reason,
        uid: rustix::process::getuid().as_raw(),
        gid: rustix::process::getgid().as_raw(),
        landlock_abi,
        landlock_abi_capped: cap.is_some(),
        unix_sockets: probe_sockets(),
        fds: fds::inventory(),
        caches: caches::probe(caches),
        mem_total: mem_total(),
        no_pty: None,
        ctty: ctty(),
        pid_one: std::process::id() == 1,
        landlock_only: landlock_only::Facts {
            run: run_name(),
            ..Default::default()
        },
        kernel: caches::kernel_version(&rustix::system::uname().release().to_string_lossy()),
        cgroups: None,
        review: None,
    })
}

#[cfg(feature = "fault-injection")]
fn landlock_abi_cap() -> Result<Option<u32>, ProbeError> {
    match std::env::var(FORCE_LANDLOCK_ABI_ENV) {
        Ok(v) => v.parse::<u32>().map(Some).map_err(|_| ProbeError::LandlockCap(v)),
        Err(_) => Ok(None),
    }
}

#[cfg(not(feature = "fault-injection"))]
fn landlock_abi_cap() -> Result<Option<u32>, ProbeError> {
    Ok(None)
}

/// Why a pty cannot be had here: one opened and closed again.
pub fn pty_refused() -> Option<String> {
    crate::sys::kernel::open_pty().err().map(no_pty_text)
}

/// `open(/dev/ptmx): No such device (ENODEV)`.
pub fn no_pty_text((call, e): (&str, rustix::io::Errno)) -> String {
    format!("{call}: {}", crate::errno::errno_text(e.raw_os_error()))
}

/// The host's memory in bytes: sysinfo(2), one call (/proc/meminfo's
/// MemTotal, without formatting the whole file).
fn mem_total() -> u64 {
    let info = rustix::system::sysinfo();
    info.totalram.saturating_mul(u64::from(info.mem_unit))
}

/// The host's bound pathname sockets, found by inode.
pub fn probe_sockets() -> SocketInventory {
    socket_inventory::inventory(rustix::process::getuid().as_raw())
}

impl HostFacts {
    /// The same host as a sandbox run by `exec::capture` sees it: stdin
    /// from /dev/null, stdout and stderr a pipe, nothing else inherited.
    pub fn as_captured(&self) -> HostFacts {
        let fd = |fd, kind, target: &str| InheritedFd::new(fd, kind, target);
        HostFacts {
            fds: vec![
                fd(0, FdKind::CharDevice, "/dev/null"),
                fd(1, FdKind::Pipe, "pipe:"),
                fd(2, FdKind::Pipe, "pipe:"),
            ],
            ..self.clone()
        }
    }
}

/// Whether this process is in the host's user namespace (its uid map the
/// whole range; assumed so where /proc cannot say).
pub fn initial_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map")
        .map(|m| m.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"])
        .unwrap_or(true)
}

/// Whether this process already runs inside a qwrap sandbox: `SANDBOX=qwrap`,
/// or a user namespace whose /dev has exactly a qwrap sandbox's entries.
pub fn inside_qwrap(sandbox_dev: &[&str]) -> bool {
    if std::env::var_os("SANDBOX").is_some_and(|v| v == "qwrap") {
        return true;
    }
    if initial_user_namespace() {
        return false;
    }
    let mut dev: Vec<String> = std::fs::read_dir("/dev")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    // /dev/console is there when the caller had a terminal.
    dev.retain(|e| e != "console");
    dev.sort();
    dev == sandbox_dev
}

/// Whether the caller has a controlling terminal, and leads its session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ctty {
    #[default]
    None,
    Held,
    /// The caller leads the terminal's session (TIOCNOTTY would hang up
    /// its foreground group).
    Leads,
}

/// This run's name on the host (its temporary directory, its cgroups):
/// qwrap's pid and a random part, since a pid is unique only in its own
/// PID namespace (two containers' qwrap may both be PID 1, one left
/// behind by a killed run). Random once per process: the same in every
/// fact that holds it.
pub fn run_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        // std seeds each RandomState from the kernel's random bytes.
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        format!("{}-{:08x}", std::process::id(), random as u32)
    })
    .clone()
}

/// The caller's controlling terminal, from /proc/self/stat (an unreadable
/// one counts as held: giving up a terminal that is not there costs an
/// open).
pub fn ctty() -> Ctty {
    let held = std::fs::read_to_string("/proc/self/stat").map_or(true, |s| {
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(4)?.parse::<i64>().ok())
            .is_none_or(|tty| tty != 0)
    });
    let leads = crate::sys::session_id() == rustix::process::getpid().as_raw_nonzero().get();
    match (held, leads) {
        (false, _) => Ctty::None,
        (true, false) => Ctty::Held,
        (true, true) => Ctty::Leads,
    }
}

/// The other paths the host's mount table shows each of `paths` (or a part
/// of it) at: a bind mount of it elsewhere, a second mount of its
/// filesystem; the table read once. An unreadable table gives none (the
/// caller names the residual).
pub fn second_paths(paths: &[&std::path::Path]) -> Vec<std::path::PathBuf> {
    std::fs::read("/proc/self/mountinfo")
        .ok()
        .and_then(|t| mountinfo::parse(&t).ok())
        .map(|m| paths.iter().flat_map(|p| mountinfo::other_views(&m, p)).collect())
        .unwrap_or_default()
}

/// Whether the root is the initramfs (rootfs). statfs(2) first: only a
/// ramfs or tmpfs root can be one, and only then is mountinfo read.
pub fn root_is_initramfs() -> bool {
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    let in_memory = rustix::fs::statfs("/").is_ok_and(|s| {
        let t = s.f_type as u64;
        t == RAMFS_MAGIC || t == TMPFS_MAGIC
    });
    in_memory
        && std::fs::read("/proc/self/mountinfo")
            .ok()
            .and_then(|t| mountinfo::parse(&t).ok())
            .is_some_and(|m| mountinfo::root_is_initramfs(&m))
}
