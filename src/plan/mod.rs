//! Plan: the ordered setup steps derived from a Policy and the host's facts.
//! Pure and deterministic: `qwrap plan` prints it, tests check it without
//! privileges, and the executor runs exactly these steps.

mod caches;
mod confine;
mod decisions;
pub mod explain;
mod fds;
pub mod filter_landlock;
pub mod filter_profile;
pub mod filter_rules;
pub mod filter_text;
mod isolation;
mod json;
mod landlock_layers;
pub mod landlock_mode;
mod layers;
mod layout;
mod legacy;
pub mod limits;
mod mount_op;
mod new_api;
mod overlay;
mod points;
pub mod review;
mod run_spec;
mod spec;
mod step;
mod step_args;
mod step_family;
mod step_host;
mod step_mount;
mod step_namespace;
mod step_process;

pub use caches::{CacheHow, CacheMount, HomeOverlay};
pub use confine::{AllowRules, Confinement, Filter, LandlockRules, PidOne, Seal, identity};
pub use decisions::Decisions;
pub use isolation::Isolation;
pub use layers::Refused;
pub use layers::{LANDLOCK_SCOPE_ABI, LayerState, Layers, landlock_paths, own_terminal};
use layers::{missing_required, unmaskable_sockets};
pub use layout::{DEVICES, dev_entries, layout};
pub use mount_op::{DevStyle, MountOp, ProcCover, Shape};
pub use overlay::{overlay_config, overlay_options};
pub use review::{ReviewLayer, ReviewTree};
pub use spec::{Entry, Identity, Join, SandboxSpec, lower};
pub use step::{
    Ambient, Egress, Flags, IdMap, LimitWatch, Namespaces, OverlayPart, OverlayUpper, Role, Step, TreeId,
    Watched,
};
pub use step_family::{Family, View};
pub use step_host::*;
pub use step_mount::*;
pub use step_namespace::*;
pub use step_process::*;

use crate::host::{HostFacts, MountApi};
use crate::policy::Policy;
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
    pub steps: Vec<Step>,
}

impl Plan {
    /// Number of detached trees the executor must hold.
    pub fn tree_count(&self) -> usize {
        self.steps
            .iter()
            .map(|s| match s {
                Step::CloneTree(CloneTree { .. })
                | Step::MakeHiddenSource(MakeHiddenSource { .. })
                | Step::MakeOverlay(MakeOverlay { .. }) => 1,
                Step::HomeCaches(HomeCaches { parts, .. }) => parts.len(),
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

/// Builds `run`'s plan for a policy on a host: the one place its layers are
/// assessed (returned beside the plan, for the reports). Refused (fail
/// closed) when `--landlock require` cannot hold or a socket of the
/// caller's cannot be masked.
pub fn build(policy: &Policy, host: &HostFacts) -> Result<(Plan, Layers), Box<Refused>> {
    let kind = Isolation::decide(policy, host);
    let mut layers = assess(policy, host, &kind);
    if let Some(message) = explain::unavailable(policy, host.kernel) {
        return Err(Box::new(Refused { message, layers }));
    }
    if kind.landlock_only() {
        return build_landlock_only(policy, host, layers);
    }
    if let Some(message) = missing_required(policy, &layers).or_else(|| unmaskable_sockets(host)) {
        return Err(Box::new(Refused { message, layers }));
    }
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
    let d = Decisions::of(policy, host, &layers);
    let limits = limits_of(policy, host, &d, &mut layers)?;
    let plan = lower(run_spec::run_spec(policy, host, &layers, &d, fds, limits));
    Ok((as_init(plan, host), layers))
}

/// Assesses the layers for a policy on a host, for the isolation decided:
/// each kind's own, none rewritten for the other.
fn assess(policy: &Policy, host: &HostFacts, kind: &Isolation) -> Layers {
    match kind {
        Isolation::Namespaces => layers::namespaces(policy, host),
        Isolation::LandlockOnly { why, asked } => landlock_layers::assess(policy, host, why, *asked),
    }
}

/// The limits' plan, their state in `layers`; refused where one cannot hold.
fn limits_of(
    policy: &Policy,
    host: &HostFacts,
    d: &Decisions,
    layers: &mut Layers,
) -> Result<limits::Limits, Box<Refused>> {
    match limits::plan(policy, host, d) {
        Ok((limits, state)) => {
            layers.limits = state;
            Ok(limits)
        }
        Err(message) => {
            layers.limits = LayerState::Off(format!("refused: {message}"));
            let layers = layers.clone();
            Err(Box::new(Refused { message, layers }))
        }
    }
}

/// `run`'s plan without namespaces (landlock_mode.rs).
fn build_landlock_only(
    policy: &Policy,
    host: &HostFacts,
    mut layers: Layers,
) -> Result<(Plan, Layers), Box<Refused>> {
    let refusal =
        landlock_mode::refused(policy, host, host.landlock_abi).or_else(|| missing_required(policy, &layers));
    if let Some(message) = refusal {
        return Err(Box::new(Refused { message, layers }));
    }
    let Some(Ok(lists)) = &host.landlock_only.lists else {
        let message = "--isolation landlock: the host's directories were not listed".into();
        return Err(Box::new(Refused { message, layers }));
    };
    // Landlock's read and write rules hold every file that stays open.
    let fds = fds::plan(&host.fds, &policy.keep_fds, false);
    let d = Decisions::of(policy, host, &layers);
    let limits = limits_of(policy, host, &d, &mut layers)?;
    let plan = lower(landlock_mode::spec(policy, host, &layers, &d, lists, fds, limits));
    Ok((as_init(plan, host), layers))
}

/// Where qwrap is PID 1 of its PID namespace, it stays as that PID 1
/// (`StayInit`) before anything else: its end would kill the warden
/// before its last work.
fn as_init(mut plan: Plan, host: &HostFacts) -> Plan {
    if host.pid_one {
        plan.steps.insert(0, Step::StayInit);
    }
    plan
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
        self.push(Step::MakeHiddenSource(MakeHiddenSource { tree }));
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
        self.push(Step::SetTreeAttr(SetTreeAttr { tree, set, private }));
        tree
    }

    pub(super) fn clone_tree(&mut self, role: Role, source: &Path, recursive: bool) -> TreeId {
        let tree = self.trees;
        self.trees += 1;
        self.push(Step::CloneTree(CloneTree {
            tree,
            role,
            source: source.to_path_buf(),
            recursive,
        }));
        tree
    }
}

#[cfg(test)]
mod tests;
