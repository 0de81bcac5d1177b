//! The layers beyond the mount view, and whether each is applied, degraded
//! (with why) or off. Pure: derived from the policy and the host's facts, so
//! inspect reports exactly what run applies.

use crate::host::HostFacts;
use crate::policy::{LandlockMode, NetworkMode, PidMode, Policy, TmpMode};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Landlock ABI that scopes signals and abstract Unix sockets (Linux 6.12).
pub const LANDLOCK_SCOPE_ABI: u32 = 6;

/// One layer's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "detail", rename_all = "lowercase")]
pub enum LayerState {
    Applied(String),
    Degraded(String),
    Off(String),
}

impl LayerState {
    pub fn is_applied(&self) -> bool {
        matches!(self, LayerState::Applied(_))
    }
}

impl Layers {
    /// The layers best-effort could not apply, as `name: why`.
    pub fn degraded(&self) -> Vec<String> {
        [
            ("isolation", &self.isolation),
            ("landlock filesystem", &self.landlock_filesystem),
            ("landlock scopes", &self.landlock_scopes),
            ("seccomp", &self.seccomp),
            ("protected git paths", &self.protected_paths),
            ("host socket masks", &self.socket_masks),
            ("caches", &self.cache_isolation),
            ("home", &self.home),
            ("terminal", &self.terminal),
            ("workspace", &self.workspace),
        ]
        .iter()
        .filter_map(|(name, s)| match s {
            LayerState::Degraded(why) => Some(format!("{name}: {why}")),
            _ => None,
        })
        .collect()
    }
}

impl fmt::Display for LayerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerState::Applied(d) => write!(f, "applied ({d})"),
            LayerState::Degraded(d) => write!(f, "degraded ({d})"),
            LayerState::Off(d) => write!(f, "off ({d})"),
        }
    }
}

/// Every layer beyond the read-only mount view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layers {
    /// Namespaces, or Landlock and seccomp alone (`--isolation`).
    pub isolation: LayerState,
    /// The isolation decided for this run (reported as `landlock_only`).
    #[serde(rename = "landlock_only")]
    pub kind: super::Isolation,
    /// Landlock: write access only beneath the writable roots, /dev and /tmp.
    pub landlock_filesystem: LayerState,
    /// Landlock: signals and abstract Unix sockets scoped to the sandbox.
    pub landlock_scopes: LayerState,
    /// Host processes: whose PID namespace, and what keeps them out of reach.
    pub processes: LayerState,
    /// `--pid private`: the command has a PID namespace of its own.
    pub private_pid: bool,
    /// seccomp: TIOCSTI and TIOCLINUX refused.
    pub seccomp: LayerState,
    /// Git hooks and config read-only.
    pub protected_paths: LayerState,
    /// Host pathname sockets masked.
    pub socket_masks: LayerState,
    /// Caches outside the workspace kept from the host (overlay).
    pub cache_isolation: LayerState,
    /// Where the command's network traffic may go.
    pub egress: LayerState,
    /// Each cache root and how it is mounted.
    pub caches: Vec<super::caches::CacheMount>,
    /// The home directory: read-only, or overlaid.
    pub home: LayerState,
    /// The command's terminal: a pty of qwrap's own, or the caller's.
    pub terminal: LayerState,
    /// The resource limits: the cgroup that holds them, and the time limit
    /// (plan/limits.rs sets it once the plan is made).
    pub limits: LayerState,
    /// `--home overlay`, where it can be had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub home_overlay: Option<super::caches::HomeOverlay>,
    /// The workspace: live (the host's directory, its agent and editor
    /// files read-only) or kept in a review layer (`--review`).
    pub workspace: LayerState,
    /// `--review`, where it can be had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<super::review::ReviewLayer>,
    /// The Landlock ABI the plan uses (0: none).
    pub landlock_abi: u32,
    /// Host sockets that will be masked.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub masked_sockets: Vec<PathBuf>,
    /// Host sockets left reachable because they were allowed by name.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub reachable_sockets: Vec<PathBuf>,
    /// The caller's variables that name a masked socket: unset inside.
    pub masked_variables: Vec<String>,
}

/// Why the sandbox asked for cannot start on this host; the layers were
/// assessed all the same, for the reports that say so.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    pub message: String,
    pub layers: Layers,
}

/// Whether `run` puts a pty of its own between the command and the
/// caller's terminal (supervise/terminal.rs): one of fds 0-2 is a terminal
/// (in `run`, by now the pty) and the terminal is not shared.
pub fn own_terminal(policy: &Policy, host: &HostFacts) -> bool {
    !policy.settings.share_terminal.value
        && host
            .fds
            .iter()
            .any(|f| f.fd < 3 && f.kind == crate::host::FdKind::Terminal)
}

/// How the command leaves the caller's session where no pty stands
/// between them: `(new_session, detach_terminal)`. Asked (`--new-session`),
/// or with `--pid private` always (PID 1 is no group leader: a plain
/// setsid, so that the command shares no process group, session or
/// autogroup with host processes); else a caller's controlling terminal
/// is given up, by a session of its own where the caller leads its
/// session (TIOCNOTTY would hang it up).
pub fn session(policy: &Policy, host: &HostFacts, private_pid: bool) -> (bool, bool) {
    if policy.new_session {
        return (true, false);
    }
    if policy.settings.share_terminal.value || own_terminal(policy, host) {
        return (false, false);
    }
    match host.ctty {
        _ if private_pid => (true, false),
        crate::host::Ctty::Leads => (true, false),
        crate::host::Ctty::Held => (false, true),
        crate::host::Ctty::None => (false, false),
    }
}

pub(super) fn terminal(policy: &Policy, host: &HostFacts) -> LayerState {
    if policy.settings.share_terminal.value {
        LayerState::Off(
            "--share-terminal: the command holds the caller's terminal; through it, it can signal the caller's other jobs (TIOCSPGRP, a background read) and leave it changed (TIOCEXCL, TIOCSETD, its modes)".into(),
        )
    } else if let (true, Some(why)) = (own_terminal(policy, host), &host.no_pty) {
        LayerState::Degraded(format!(
            "no pty can be had here ({why}): the command holds the caller's terminal"
        ))
    } else if own_terminal(policy, host) {
        LayerState::Applied(
            "a pty of qwrap's own, in a session of its own: the caller's terminal is held outside, and left in its modes".into(),
        )
    } else {
        LayerState::Applied(match host.ctty {
            crate::host::Ctty::None => "no terminal on fds 0-2, and no controlling terminal (where one is on fds 0-2: a pty of qwrap's own)".into(),
            _ => "no terminal on fds 0-2: the caller's controlling terminal is given up before the command runs (TIOCNOTTY, or a session of its own), so /dev/tty opens nothing".into(),
        })
    }
}

/// Landlock's file rules and its scopes, as far as the kernel and the
/// policy let them hold.
pub(super) fn landlock_states(policy: &Policy, host: &HostFacts) -> (LayerState, LayerState) {
    let abi = host.landlock_abi;
    let capped = if host.landlock_abi_capped {
        ", capped by the test switch QWRAP_TEST_LANDLOCK_ABI"
    } else {
        ""
    };
    let (landlock_filesystem, landlock_scopes) = match policy.settings.landlock.value {
        LandlockMode::Off => (
            LayerState::Off("--landlock off".into()),
            LayerState::Off("--landlock off".into()),
        ),
        _ if abi == 0 => (
            LayerState::Degraded(format!("the kernel offers no Landlock{capped}")),
            LayerState::Degraded(format!("the kernel offers no Landlock{capped}")),
        ),
        _ => (
            LayerState::Applied(format!(
                "Landlock ABI {abi}{capped}: writes only beneath the writable roots, /dev{}",
                if policy.settings.tmp.value == TmpMode::Private {
                    " and /tmp"
                } else {
                    ""
                }
            )),
            if abi >= LANDLOCK_SCOPE_ABI {
                LayerState::Applied(format!(
                    "Landlock ABI {abi}{capped}: host processes cannot be signalled, host abstract sockets cannot be reached"
                ))
            } else {
                LayerState::Degraded(format!(
                    "Landlock ABI {abi}{capped} < {LANDLOCK_SCOPE_ABI}: host abstract sockets are reachable with the network open (signals go through the warden instead)"
                ))
            },
        ),
    };
    (landlock_filesystem, landlock_scopes)
}

/// The layers of a sandbox in namespaces.
pub(super) fn namespaces(policy: &Policy, host: &HostFacts) -> Layers {
    let abi = host.landlock_abi;
    let (landlock_filesystem, landlock_scopes) = landlock_states(policy, host);
    // A domain that handles filesystem access forbids mount(2), which the
    // nested sandboxes of a private PID namespace make.
    let private_pid = policy.settings.pid.value == PidMode::Private;
    let landlock_filesystem = match landlock_filesystem {
        LayerState::Applied(_) if private_pid => LayerState::Off(format!(
            "--pid private (from {}): a Landlock domain that handles file access forbids mount(2), which nested sandboxes make; writes outside the roots are held by the read-only mounts alone",
            policy.settings.pid.source
        )),
        other => other,
    };
    let processes = if private_pid {
        LayerState::Applied("a PID namespace of its own with its own /proc: host processes can be neither seen nor named; what is left behind dies with its PID 1".into())
    } else {
        LayerState::Applied(format!(
            "the host's PID namespace: host processes are visible, not reachable ({})",
            if abi >= LANDLOCK_SCOPE_ABI && policy.settings.landlock.value != LandlockMode::Off {
                "Landlock's signal scope and the warden"
            } else {
                "the warden"
            }
        ))
    };
    let inv = &host.unix_sockets;
    let (masked_sockets, reachable_sockets) = sockets(policy, &inv.paths);
    let socket_masks = socket_masks(inv, masked_sockets.len(), reachable_sockets.len());
    let caches = super::caches::cache_mounts(policy, host);
    let (home, home_overlay) = super::caches::home_layer(policy, host);
    let (workspace, review) = super::review::workspace_layer(policy, host);
    Layers {
        workspace,
        review,
        isolation: LayerState::Applied(format!(
            "namespaces: user, mount, IPC{}{}",
            if policy.settings.network.value.private() {
                ", network"
            } else {
                ""
            },
            if private_pid { ", PID" } else { "" }
        )),
        kind: super::Isolation::Namespaces,
        home,
        home_overlay,
        terminal: terminal(policy, host),
        limits: LayerState::Off(super::limits::NONE_ASKED.into()),
        egress: egress(policy),
        cache_isolation: super::caches::cache_layer(&caches),
        caches,
        landlock_filesystem,
        landlock_scopes,
        processes,
        private_pid,
        seccomp: LayerState::Applied(
            "ioctl TIOCSTI and TIOCLINUX, setuid and setgid mode bits fail with EPERM".into(),
        ),
        protected_paths: protected_paths(policy),
        socket_masks,
        landlock_abi: if landlock_applies(policy, abi) { abi } else { 0 },
        masked_variables: masked_variables(policy, &masked_sockets),
        masked_sockets,
        reachable_sockets,
    }
}

/// The socket masks' state: degraded where sock_diag was missing or a
/// socket could not be found.
fn socket_masks(inv: &crate::host::SocketInventory, masked: usize, reachable: usize) -> LayerState {
    let counts = format!("{masked} host sockets masked, {reachable} reachable");
    let unresolved: Vec<&str> = inv.unresolved.iter().map(|u| u.what.as_str()).collect();
    if let Some(why) = &inv.fallback {
        LayerState::Degraded(format!("{counts}; {why}"))
    } else if !unresolved.is_empty() {
        LayerState::Degraded(format!(
            "{counts}; not found, so not masked: {}",
            unresolved.join(", ")
        ))
    } else {
        LayerState::Applied(counts)
    }
}

/// The socket variables whose socket is masked inside.
fn masked_variables(policy: &Policy, masked: &[PathBuf]) -> Vec<String> {
    policy
        .socket_vars
        .iter()
        .filter(|(_, p)| {
            masked.contains(p)
                // Under the private /tmp, where only allowed sockets are shown.
                || (policy.settings.tmp.value == TmpMode::Private
                    && p.starts_with("/tmp")
                    && !policy.allowed_sockets.iter().any(|a| a.value == *p))
        })
        .map(|(v, _)| v.clone())
        .collect()
}

/// The git paths kept read-only in a checkout (hooks, config).
fn protected_paths(policy: &Policy) -> LayerState {
    if policy.settings.allow_git_config.value {
        LayerState::Off(format!(
            "allow_git_config from {}",
            policy.settings.allow_git_config.source
        ))
    } else if policy.protected.is_empty() && !policy.git_layouts.is_empty() {
        // The live git guard holds them: each git dir's top level is the
        // sandbox's own, its hooks and config copies that stay inside.
        LayerState::Applied(format!(
            "the git guard: {} git dir{} whose hooks and config are the sandbox's own copies",
            policy.git_layouts.len(),
            if policy.git_layouts.len() == 1 { "" } else { "s" }
        ))
    } else if policy.protected.is_empty() {
        LayerState::Off("the workspace is not a git checkout".into())
    } else {
        LayerState::Applied(format!("{} git paths read-only", policy.protected.len()))
    }
}

pub(super) fn landlock_applies(policy: &Policy, abi: u32) -> bool {
    policy.settings.landlock.value != LandlockMode::Off && abi > 0
}

/// With `--landlock require`, what the kernel cannot give; None when all is
/// there (or Landlock is not required).
pub fn missing_required(policy: &Policy, layers: &Layers) -> Option<String> {
    missing_landlock(policy, layers).or_else(|| super::review::refusal(policy, &layers.workspace))
}

/// A socket of the caller's whose file may be in view but was not found
/// cannot be masked: the sandbox does not start (fail closed).
pub fn unmaskable_sockets(host: &HostFacts) -> Option<String> {
    let own: Vec<&str> = host
        .unix_sockets
        .unresolved
        .iter()
        .filter(|u| u.own)
        .map(|u| u.what.as_str())
        .collect();
    (!own.is_empty()).then(|| {
        format!(
            "cannot mask host sockets whose file was not found: {} (the process that bound them changed directory since, or the file is reachable only through another path); stop that program, or restart it from the directory it binds in",
            own.join(", ")
        )
    })
}

fn missing_landlock(policy: &Policy, layers: &Layers) -> Option<String> {
    if policy.settings.landlock.value != LandlockMode::Require {
        return None;
    }
    [
        ("Landlock filesystem rules", &layers.landlock_filesystem),
        ("Landlock scopes", &layers.landlock_scopes),
    ]
    .iter()
    .find(|(_, s)| !s.is_applied())
    .map(|(name, s)| format!("--landlock require: {name} {s}"))
}

/// Splits the host's sockets into those to mask and those left reachable
/// (allowed by name). Sockets under the private /tmp or under /dev are
/// hidden already, and so are those at the top of a git dir (the
/// sandbox's own); one inside a writable root is masked as any other: a
/// tmux, agent or language server socket there would take commands.
fn sockets(policy: &Policy, inventory: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let hidden = |p: &Path| policy.replaced_inside(p);
    let mut masked = Vec::new();
    let mut reachable = Vec::new();
    for s in inventory {
        // Not the host's inside (/dev, private /tmp), or not in the view.
        if hidden(s) || !policy.shows(s) {
            continue;
        }
        let own_git = policy
            .git_layouts
            .iter()
            .any(|g| s.parent().is_some_and(|p| g.own().iter().any(|o| o == p)));
        if own_git {
            continue;
        }
        let allowed = policy.allowed_sockets.iter().any(|a| &a.value == s);
        if allowed {
            reachable.push(s.clone());
        } else {
            masked.push(s.clone());
        }
    }
    masked.sort();
    masked.dedup();
    reachable.sort();
    reachable.dedup();
    (masked, reachable)
}

/// The directories Landlock lets the sandbox write beneath (the home, when
/// it is overlaid: its writes land in the workspace's layer).
pub fn landlock_paths(policy: &Policy, home: Option<&super::caches::HomeOverlay>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = policy.writable_roots.iter().map(|r| r.path.clone()).collect();
    v.extend(home.map(|h| h.home.clone()));
    v.push(PathBuf::from("/dev"));
    if policy.settings.tmp.value == TmpMode::Private {
        v.push(PathBuf::from("/tmp"));
    }
    v
}

/// Where the command may make FIFOs: nowhere a host tool reads later (a
/// FIFO named `.gitignore` in the workspace makes host git wait), so only
/// /dev, the private /tmp, the host's temp with `--tmp host`, and the
/// caches and home kept in layers; and none of these where a workspace or
/// an `--include` root lies beneath it (a workspace in /tmp, or in the
/// home with `--home overlay`): a Landlock rule holds for all beneath.
pub fn fifo_paths(policy: &Policy, home: Option<&super::caches::HomeOverlay>) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = home.map(|h| h.home.clone()).into_iter().collect();
    v.push(PathBuf::from("/dev"));
    if policy.settings.tmp.value == TmpMode::Private {
        v.push(PathBuf::from("/tmp"));
    }
    v.retain(|f| !holds_a_root(policy, f));
    fifo_roots(policy).into_iter().chain(v).collect()
}

/// The writable roots where FIFOs may be made (`--isolation landlock`'s
/// too): the caches' and the command's own temporary directory, unless a
/// workspace or `--include` root lies beneath one.
pub fn fifo_roots(policy: &Policy) -> Vec<PathBuf> {
    policy
        .writable_roots
        .iter()
        .filter(|r| layered(r) && !holds_a_root(policy, &r.path))
        .map(|r| r.path.clone())
        .collect()
}

/// A root whose files no host tool reads later: a cache's or a temporary
/// directory.
fn layered(r: &crate::policy::WritableRoot) -> bool {
    r.cache.is_some() || r.reason == crate::policy::RootReason::Temp
}

/// Whether a workspace or `--include` root lies at or beneath `p`.
fn holds_a_root(policy: &Policy, p: &std::path::Path) -> bool {
    policy
        .writable_roots
        .iter()
        .any(|r| !layered(r) && r.path.starts_with(p))
}

fn egress(policy: &Policy) -> LayerState {
    match policy.settings.network.value {
        NetworkMode::Open => LayerState::Off("--network open: the host's network".into()),
        NetworkMode::Closed => LayerState::Applied(
            "--network closed: a private network namespace with lo only; host abstract sockets are out of reach on every kernel".into(),
        ),
        NetworkMode::Proxied => LayerState::Applied(format!(
            "--network proxied: a private network namespace with lo only; TCP leaves only through the warden's proxy on 127.0.0.1:{} (HTTP CONNECT, absolute-URI HTTP, SOCKS5) to {} listed destination{}, names judged before any lookup and special addresses refused unless listed; UDP and DNS are not forwarded; host abstract sockets are out of reach on every kernel",
            crate::egress::PROXY_PORT,
            policy.allowed_domains.len(),
            if policy.allowed_domains.len() == 1 { "" } else { "s" }
        )),
    }
}
