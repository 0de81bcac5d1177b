//! Plan: the ordered setup steps derived from a Policy and the host's facts.
//! Pure and deterministic: `qwrap plan` prints it, tests check it without
//! privileges, and the executor runs exactly these steps.

mod caches;
mod confine;
mod fds;
pub mod filter_rules;
pub mod filter_text;
mod json;
mod layers;
mod layout;
mod legacy;
mod mount_op;
mod new_api;
mod overlay;
mod points;
mod step;
mod step_args;
mod step_purpose;
mod step_text;
mod step_text_process;

pub use caches::{CacheHow, CacheMount, HomeOverlay};
pub use confine::{Confinement, Filter, LandlockRules, PidOne, Seal, identity};
pub use layers::Refused;
pub use layers::{LANDLOCK_SCOPE_ABI, LayerState, Layers, landlock_paths};
use layers::{assess, missing_required, unmaskable_sockets};
pub use layout::{DEVICES, dev_entries, layout};
pub use mount_op::{DevStyle, MountOp, Shape};
pub use overlay::{overlay_config, overlay_options};
pub use step::{Ambient, Egress, Flags, IdMap, Namespaces, OverlayPart, OverlayUpper, Role, Step, TreeId};

use crate::host::{HostFacts, MountApi};
use crate::policy::{NetworkMode, PidMode, Policy, ViewMode};
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where the legacy path mounts its staging tmpfs, inside the private mount
/// namespace, before its first pivot.
pub const STAGING: &str = "/tmp";
/// Where the new mount API's staged root (bwrap mode's) is assembled, in
/// the tmpfs over `STAGING`: files made for `--bind-data` live beside it.
pub const STAGED_NEW_ROOT: &str = "/tmp/newroot";
/// Where the legacy path assembles the new root, after its first pivot.
pub const LEGACY_NEW_ROOT: &str = "/newroot";
/// Where the legacy path keeps the host tree until the final pivot.
pub const LEGACY_OLD_ROOT: &str = "/oldroot";

/// The ordered steps of one sandbox setup.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub mount_api: MountApi,
    /// bwrap mode: the directory that becomes the root; the executor
    /// resolves destinations under it inside it (`RESOLVE_IN_ROOT`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::lossy::opt_path"
    )]
    pub new_root: Option<PathBuf>,
    /// `run`'s layers as assessed on this host (bwrap mode reports its own).
    #[serde(skip)]
    pub layers: Option<Layers>,
    pub steps: Vec<Step>,
}

impl Plan {
    /// Number of detached trees the executor must hold.
    pub fn tree_count(&self) -> usize {
        self.steps
            .iter()
            .map(|s| match s {
                Step::CloneTree { .. } | Step::MakeHiddenSource { .. } | Step::MakeOverlay { .. } => 1,
                Step::HomeCaches { parts, .. } => parts.len(),
                _ => 0,
            })
            .sum()
    }
}

impl Plan {
    /// The plan with each step's text wrapped at `width` columns, between
    /// its calls (`; `), continuation lines indented under the text.
    pub fn wrapped(&self, width: usize) -> String {
        let mut out = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            let mut line = format!("{i:>3}  ");
            let indent = line.len();
            let text = step.to_string();
            for (k, part) in text.split_inclusive("; ").enumerate() {
                if k > 0 && line.len() + part.len() > width {
                    out.push_str(line.trim_end());
                    out.push('\n');
                    line = " ".repeat(indent + 2);
                }
                line.push_str(part);
            }
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.steps.iter().enumerate() {
            writeln!(f, "{i:>3}  {step}")?;
        }
        Ok(())
    }
}

/// Builds the plan for a policy on a host: the one place its layers are
/// assessed. Refused (fail closed) when `--landlock require` cannot hold or
/// a socket of the caller's cannot be masked.
pub fn build(policy: &Policy, host: &HostFacts) -> Result<Plan, Box<Refused>> {
    let layers = assess(policy, host);
    if let Some(message) = missing_required(policy, &layers).or_else(|| unmaskable_sockets(host)) {
        return Err(Box::new(Refused { message, layers }));
    }
    let private_pid = policy.settings.pid.value == PidMode::Private;
    // Before any mount changes, while the host's paths are in view. Where
    // Landlock's file rules do not hold (--pid private, --landlock off, an
    // old kernel), files that stay are sealed by a read-only bind instead.
    let seal_files = !layers.landlock_filesystem.is_applied();
    let fds = fds::plan(&host.fds, &policy.keep_fds, seal_files);
    if !fds.unsealable.is_empty() {
        let message = format!(
            "inherited {} cannot be opened again read-only by its name, and without Landlock's file rules ({}) it would stay writable through /proc/self/fd; pass it another way (a pipe)",
            fds.unsealable.join(", "),
            layers.landlock_filesystem
        );
        return Err(Box::new(Refused { message, layers }));
    }
    let mut b = Builder::default();
    for path in &policy.create_before {
        b.push(Step::CreateHostDir { path: path.clone() });
    }
    if let Some(step) = caches::prepare(policy, host, &layers.caches, layers.home_overlay.as_ref()) {
        b.push(step);
    }
    for r in &policy.redacted_rc {
        b.push(Step::WriteHostFile {
            path: r.copy.clone(),
            text: r.text.clone(),
        });
    }
    let proxied = policy.network == NetworkMode::Proxied;
    let scoped = layers.landlock_abi >= LANDLOCK_SCOPE_ABI;
    b.push(Step::StartWarden {
        keep_background: policy.settings.keep_background.value,
        egress: proxied.then(|| Egress {
            allow: crate::egress::AllowList(policy.allowed_domains.iter().map(|d| d.value.clone()).collect()),
            log: policy.egress_log.clone(),
            say: !policy.quiet && !policy.settings.keep_background.value,
        }),
        git: policy.git_layouts.iter().flat_map(|g| g.own()).collect(),
        scoped: layers.landlock_abi >= LANDLOCK_SCOPE_ABI && !policy.settings.keep_background.value,
        notes: !policy.quiet && !policy.settings.keep_background.value && !private_pid,
    });
    let ns = Namespaces {
        user: true,
        pid: private_pid,
        net: policy.network.private(),
        ipc: !policy.settings.share_ipc.value,
        ..Namespaces::default()
    };
    if private_pid {
        // qwrap stays outside as the command's stand-in: it relays signals
        // and exits as the command does. It dies with its parent, and PID 1
        // with it (armed in the clone's child).
        if policy.die_with_parent {
            b.push(Step::DieWithParent);
        }
        b.push(Step::CloneMonitor {
            ns,
            info_fd: None,
            json_status_fd: None,
            join: false,
            forward_signals: true,
        });
    } else {
        b.push(Step::Unshare { ns });
    }
    b.steps
        .extend(identity((host.uid, host.uid), (host.gid, host.gid)));
    if policy.network.private() {
        b.push(Step::LoopbackUp);
    }
    if proxied {
        b.push(Step::ListenEgress {
            port: crate::egress::PROXY_PORT,
        });
    }
    if !policy.settings.share_keyring.value {
        b.push(Step::NewSessionKeyring);
    }
    b.push(Step::MakeMountsSlave);
    for path in &fds.binds {
        b.push(Step::BindMount {
            role: Role::InheritedDevice,
            source: path.clone(),
            target: path.clone(),
            recursive: false,
        });
        b.push(Step::Remount {
            target: path.clone(),
            flags: Flags {
                rdonly: true,
                nosuid: true,
                noexec: true,
                nodev: false,
            },
        });
    }
    for (fd, path) in fds.reopen {
        b.push(Step::ReopenFd { fd, path });
    }

    let ops = layout(
        policy,
        &layers.masked_sockets,
        fds.console.as_deref(),
        &layers.caches,
        layers.home_overlay.as_ref(),
    );
    // The minimal view assembles a new root, as the legacy path does.
    let minimal = policy.view == ViewMode::Minimal;
    let mount_api = if minimal { MountApi::Legacy } else { host.mount_api };
    match mount_api {
        MountApi::New => {
            b.mounts_new_api(&ops, Shape::RUN);
        }
        MountApi::Legacy => {
            let new_root = b.mounts_legacy(&ops, Shape::RUN);
            if minimal {
                // No write lands in the empty root's throwaway tmpfs.
                b.push(Step::Remount {
                    target: new_root.clone(),
                    flags: Flags::RDONLY_NOSUID_NODEV,
                });
            }
            b.push(Step::EnterRoot { new_root });
        }
    }
    if !policy.git_layouts.is_empty() {
        b.push(Step::HandGitDirs {
            dirs: policy.git_layouts.iter().flat_map(|g| g.own()).collect(),
        });
    }
    let mut env = policy.env.clone();
    if proxied {
        // The proxy's variables, but where the user said otherwise with
        // --setenv or --unsetenv (docs/security.md: --setenv always wins).
        for (k, v) in crate::egress::proxy_variables() {
            let said = policy.user_env_names.iter().any(|n| n == k);
            if !said {
                env.unset.retain(|u| u != k);
                env.set.retain(|(s, _)| s != k);
                env.set.push((k.into(), v.into()));
            }
        }
    }
    for v in &layers.masked_variables {
        if !env.unset.iter().any(|u| u == v.as_str()) && !env.set.iter().any(|(k, _)| k == v.as_str()) {
            env.unset.push(v.into());
        }
    }
    b.steps.extend(
        Confinement {
            chdir: vec![policy.workspace.clone()],
            inside: Vec::new(),
            capabilities: vec![Step::DropCapabilities {
                keep: Vec::new(),
                bounding: true,
                ambient: Ambient::Lower,
            }],
            seal: Some(Seal {
                keep: fds.keep,
                closed: fds.closed,
            }),
            // With a private PID namespace only the scopes: a domain that
            // handles filesystem access forbids mount(2) to nested sandboxes.
            landlock: (layers.landlock_abi > 0 && (!private_pid || scoped)).then(|| LandlockRules {
                abi: layers.landlock_abi,
                paths: landlock_paths(policy, layers.home_overlay.as_ref()),
                scoped,
                filesystem: !private_pid,
            }),
            // A private PID namespace's leftovers die with its PID 1.
            reaper: scoped && !policy.settings.keep_background.value && !private_pid,
            // One filter, the warden's rules included. Signals are the
            // kernel's to refuse where Landlock scopes them, and every call
            // aimed at a process where host processes cannot be named.
            filter: if private_pid {
                Filter::PrivatePid {
                    unscoped: !scoped,
                    root: host.uid == 0,
                }
            } else {
                Filter::Warden {
                    signals: !scoped,
                    root: host.uid == 0,
                }
            },
            caller_filters: Vec::new(),
            // With a monitor, armed before its fork.
            die_with_parent: policy.die_with_parent && !private_pid,
            new_session: policy.new_session,
            pid_one: private_pid.then_some(PidOne {
                forward_signals: true,
                wait_all: policy.settings.keep_background.value,
                hand_to_warden: true,
            }),
            block_fd: None,
            argv: policy.command.clone(),
            argv0: None,
            env,
        }
        .steps(),
    );
    Ok(Plan {
        mount_api,
        new_root: None,
        layers: Some(layers),
        steps: b.steps,
    })
}

/// The steps that carry out a front end's mount operations on one mount
/// API, and the root they assemble when it is not the host tree in place
/// (to enter once the caller's other steps before the switch are in).
pub fn mount_steps(ops: &[MountOp], api: MountApi, shape: Shape) -> (Vec<Step>, Option<PathBuf>) {
    let mut b = Builder::default();
    let root = match api {
        MountApi::New => b.mounts_new_api(ops, shape),
        MountApi::Legacy => Some(b.mounts_legacy(ops, shape)),
    };
    (b.steps, root)
}

/// `root` + absolute `path` ("/tmp" + "/a/b" = "/tmp/a/b").
pub fn under(root: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix("/") {
        Ok(rel) if rel.as_os_str().is_empty() => root.to_path_buf(),
        Ok(rel) => root.join(rel),
        Err(_) => root.join(path),
    }
}

#[derive(Default)]
pub(super) struct Builder {
    steps: Vec<Step>,
    trees: usize,
    /// Directories known to exist on filesystems the plan created.
    made: BTreeSet<PathBuf>,
    /// Files made for `--bind-data`, beside the new root.
    data_files: usize,
}

impl Builder {
    pub(super) fn push(&mut self, s: Step) {
        self.steps.push(s);
    }

    /// The tmpfs hidden paths are covered with, when any path is hidden.
    pub(super) fn hidden_source(&mut self, ops: &[MountOp]) -> Option<TreeId> {
        if !ops.iter().any(|o| matches!(o, MountOp::Hidden { .. })) {
            return None;
        }
        let tree = self.trees;
        self.trees += 1;
        self.push(Step::MakeHiddenSource { tree });
        Some(tree)
    }

    /// A clone of `source` with `set` flags (and private propagation).
    pub(super) fn clone_with(
        &mut self,
        role: Role,
        source: &Path,
        recursive: bool,
        set: Flags,
        private: bool,
    ) -> TreeId {
        let tree = self.clone_tree(role, source, recursive);
        self.push(Step::SetTreeAttr { tree, set, private });
        tree
    }

    pub(super) fn clone_tree(&mut self, role: Role, source: &Path, recursive: bool) -> TreeId {
        let tree = self.trees;
        self.trees += 1;
        self.push(Step::CloneTree {
            tree,
            role,
            source: source.to_path_buf(),
            recursive,
        });
        tree
    }
}

#[cfg(test)]
mod tests;
