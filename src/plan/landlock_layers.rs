//! The layers of a Landlock-only sandbox: what each one is without
//! namespaces, and what stays the host's.

use super::landlock_mode::{LANDLOCK_ONLY_ABI, cache_home, private_tmp};
use super::layers::{landlock_applies, landlock_states, terminal};
use super::{Isolation, LANDLOCK_SCOPE_ABI, LayerState, Layers};
use crate::host::HostFacts;
use crate::policy::{CacheMode, LandlockMode, NetworkMode, PidMode, Policy};

/// The layers without namespaces; `why`: what chose this mode, `asked`:
/// by name (else it is a fallback, and so degraded).
pub fn assess(policy: &Policy, host: &HostFacts, why: &str, asked: bool) -> Layers {
    let abi = host.landlock_abi;
    let shared = "the host's /tmp (its names listed, nothing read or written but $TMPDIR, the command's own), /dev (its names listed; only null, zero, full, random, urandom, tty, ptmx and the caller's terminal opened, read and written; no pty of the command's own), the PID namespace (host processes visible, not reachable), the SysV IPC, POSIX message queues and keyrings (their calls refused)";
    let text = format!("Landlock and seccomp only ({why}); shared with the host: {shared}");
    let (workspace, review) = super::review::workspace_layer(policy, host);
    let (home, home_overlay) = (
        LayerState::Applied("the host's, read-only outside the writable roots (Landlock)".into()),
        None,
    );
    Layers {
        isolation: if asked {
            LayerState::Applied(text)
        } else {
            LayerState::Degraded(text)
        },
        kind: Isolation::LandlockOnly { why: why.into(), asked },
        landlock_filesystem: filesystem(policy, host),
        landlock_scopes: landlock_states(policy, host).1,
        processes: processes(abi),
        private_pid: policy.settings.pid.value == PidMode::Private,
        socket_masks: LayerState::Applied(
            "no Unix socket can be made (socket(AF_UNIX) fails with EPERM): no host socket is reachable".into(),
        ),
        masked_sockets: Vec::new(),
        reachable_sockets: Vec::new(),
        masked_variables: policy.socket_vars.iter().map(|(v, _)| v.clone()).collect(),
        protected_paths: protected_paths(policy),
        cache_isolation: cache_isolation(policy),
        caches: Vec::new(),
        home,
        home_overlay,
        egress: egress(policy, abi),
        seccomp: LayerState::Applied(
            "ioctl TIOCSTI and TIOCLINUX, setuid and setgid mode bits fail with EPERM; a second filter refuses Unix sockets, keyrings, SysV IPC and POSIX message queues".into(),
        ),
        terminal: terminal(policy, host),
        limits: LayerState::Off(super::limits::NONE_ASKED.into()),
        workspace,
        review,
        landlock_abi: if landlock_applies(policy, abi) { abi } else { 0 },
    }
}

/// Landlock's file rules: this mode's whole file boundary.
fn filesystem(policy: &Policy, host: &HostFacts) -> LayerState {
    let abi = host.landlock_abi;
    let usable = policy.settings.landlock.value != LandlockMode::Off && abi >= LANDLOCK_ONLY_ABI;
    if usable {
        LayerState::Applied(format!(
            "Landlock ABI {abi}: reads refused beneath the hidden paths, the host's /tmp (and /dev/shm, /dev/mqueue where they hold a file of the caller's), writes only beneath the writable roots{}; a file's mode bits and times, for which Landlock has no right, changed by the warden on the command's behalf only there (EPERM elsewhere); ownership and extended attributes refused by the filter",
            private_tmp(policy, host)
                .map(|t| format!(" and {}", t.display()))
                .unwrap_or_default()
        ))
    } else {
        LayerState::Off(format!(
            "Landlock ABI {abi} < {LANDLOCK_ONLY_ABI} or --landlock off: this mode does not start"
        ))
    }
}

/// Host processes: shared, kept out of reach.
fn processes(abi: u32) -> LayerState {
    LayerState::Applied(format!(
        "the host's PID namespace: host processes are visible, not reachable ({})",
        if abi >= LANDLOCK_SCOPE_ABI {
            "Landlock's signal scope, and the warden, which allows a call aimed at a process only when it descends from the command"
        } else {
            "the warden, which allows a signal or call aimed at a process only when it descends from the command; what the command leaves behind, reparented away from it, is not found below Linux 6.12"
        }
    ))
}

/// The git dirs and read-only paths, left out of the write rules.
fn protected_paths(policy: &Policy) -> LayerState {
    if policy.settings.allow_git_config.value {
        LayerState::Off(format!(
            "allow_git_config from {}: the git dirs are writable",
            policy.settings.allow_git_config.source
        ))
    } else if policy.git_layouts.is_empty() && policy.read_only.is_empty() {
        LayerState::Off("no git dir and no read-only path inside the writable roots".into())
    } else {
        LayerState::Applied(format!(
            "{} git dir(s) and {} read-only path(s) left out of Landlock's write rules: nothing in them changes; new names cannot be made directly in a directory that holds one (Landlock grants beneath a directory, and a grant there would reach them)",
            policy.git_layouts.len(),
            policy.read_only.len()
        ))
    }
}

/// No overlay without a mount namespace: the caches are the host's.
fn cache_isolation(policy: &Policy) -> LayerState {
    match (policy.settings.cache.value, cache_home(policy)) {
        (CacheMode::Shared, _) => LayerState::Off("--cache shared: the caches are written through to the host".into()),
        (_, Some(dir)) => LayerState::Degraded(format!(
            "no overlay without a mount namespace: the host's caches are read-only; $XDG_CACHE_HOME is the workspace's own {} (--cache shared writes them on the host)",
            dir.display()
        )),
        (_, None) => LayerState::Degraded(
            "no overlay without a mount namespace: the host's caches are read-only (--cache shared writes them on the host)".into(),
        ),
    }
}

/// The network: the host's, or closed by the filter (and Landlock).
fn egress(policy: &Policy, abi: u32) -> LayerState {
    match policy.settings.network.value {
        NetworkMode::Open => LayerState::Off("--network open: the host's network (no Unix sockets)".into()),
        NetworkMode::Closed => LayerState::Applied(format!(
            "--network closed: socket(2) fails with EPERM for every family{}",
            if abi >= 4 {
                "; TCP bind and connect refused by Landlock"
            } else {
                ""
            }
        )),
        NetworkMode::Proxied => {
            LayerState::Off("--network proxied needs a network namespace: this mode does not start".into())
        }
    }
}
