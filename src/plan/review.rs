//! The workspace as a layer: in the live mode (the default) the host's
//! directory itself, its agent and editor files read-only; with `--review`
//! an overlay of it (and of each git root outside it) whose upper layer
//! lies in the run's own directory under qwrap's state directory, made on
//! the host before anything is unshared.

use super::{LayerState, MountOp, OverlayUpper, Step};
use crate::host::HostFacts;
use crate::plan::PrepareReview;
use crate::policy::Policy;
use serde::Serialize;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// A run's layer: `dir` (`SET/ID`), and for each tree overlaid its upper
/// and work directories (`dir/N/upper`, `dir/N/work`); `idle`: an earlier
/// run left it empty, its directories are there; `boot`: this boot's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewLayer {
    pub id: u32,
    pub idle: bool,
    pub boot: String,
    #[serde(serialize_with = "crate::lossy::path")]
    pub dir: PathBuf,
    pub trees: Vec<ReviewTree>,
}

/// One host directory overlaid in a review layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewTree {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub upper: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub work: PathBuf,
}

/// The layout of a layer's directory, shared with `qwrap review`.
pub fn tree_dirs(layer: &std::path::Path, n: usize) -> (PathBuf, PathBuf) {
    let t = layer.join(n.to_string());
    (t.join("upper"), t.join("work"))
}

/// The workspace as a layer, and the review layer where there is one. A
/// review that cannot be had is degraded here and refused by `build`: a
/// run never falls back to writing the host's workspace.
pub fn workspace_layer(policy: &Policy, host: &HostFacts) -> (LayerState, Option<ReviewLayer>) {
    let Some(review) = &policy.review else {
        let s = &policy.settings.allow_agent_files;
        if s.value {
            return (
                LayerState::Off(format!(
                    "live, allow_agent_files from {}: writes reach the host's workspace as they happen, its agent and editor files included",
                    s.source
                )),
                None,
            );
        }
        let guarded = policy
            .read_only
            .iter()
            .filter(|r| r.source == "agent file")
            .count();
        return (
            LayerState::Applied(format!(
                "live: writes reach the host's workspace as they happen; {guarded} agent and editor file{} read-only, {} more named at exit if the command makes them",
                if guarded == 1 { "" } else { "s" },
                policy.watched.len()
            )),
            None,
        );
    };
    let source = &policy.settings.review.source;
    let why = match &host.review {
        None => "the host was not probed for it".to_string(),
        Some(f) if !f.mounts_beneath.is_empty() => format!(
            "the host has mounts beneath it ({}), and overlayfs in a user namespace refuses a lower layer with mounts beneath it (it would hide them)",
            f.mounts_beneath
                .iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(f) if f.unavailable.is_some() => f.unavailable.clone().unwrap_or_default(),
        Some(f) => {
            let dir = review.set.join(f.id.to_string());
            let trees = review
                .trees
                .iter()
                .enumerate()
                .map(|(n, path)| {
                    let (upper, work) = tree_dirs(&dir, n);
                    ReviewTree {
                        path: path.clone(),
                        upper,
                        work,
                    }
                })
                .collect();
            return (
                LayerState::Applied(format!(
                    "review (--review from {source}): every change to the workspace{} lands in layer {} ({}), never in the host's workspace until `qwrap review apply {}`",
                    if review.trees.len() > 1 {
                        " and its git dir"
                    } else {
                        ""
                    },
                    f.id,
                    dir.display(),
                    f.id
                )),
                Some(ReviewLayer {
                    id: f.id,
                    idle: f.idle,
                    boot: f.boot.clone(),
                    dir,
                    trees,
                }),
            );
        }
    };
    (
        LayerState::Degraded(format!(
            "--review (from {source}) cannot be had: the workspace cannot be overlaid: {why}"
        )),
        None,
    )
}

/// Where `--review` was asked for and cannot be had: the sandbox is
/// refused (exit 125), with a hint.
pub fn refusal(policy: &Policy, layer: &LayerState) -> Option<String> {
    match (&policy.review, layer) {
        (Some(_), LayerState::Degraded(why)) => Some(format!(
            "{why}\nhint: unmount what lies beneath the workspace, or keep it elsewhere; without --review the command writes the workspace itself"
        )),
        _ => None,
    }
}

/// The review layer's trees overlaid where the layout binds them writable.
pub fn overlay_trees(ops: &mut [MountOp], layer: &ReviewLayer) {
    for op in ops.iter_mut() {
        if let MountOp::Writable(p) = op
            && let Some(t) = layer.trees.iter().find(|t| t.path == *p)
        {
            *op = MountOp::Overlay {
                path: t.path.clone(),
                lower: vec![t.path.clone()],
                upper: OverlayUpper::Volatile {
                    upper: t.upper.clone(),
                    work: t.work.clone(),
                },
            };
        }
    }
}

/// The step that makes the layer on the host: its directory (new), each
/// tree's upper and work, the lock the warden holds, the record
/// `qwrap review` reads (the start time added by the executor).
pub fn prepare(policy: &Policy, layer: &ReviewLayer) -> Step {
    let mut record: Vec<u8> = format!("qwrap-review\t1\0boot\t{}\0workspace\t", layer.boot).into_bytes();
    record.extend(policy.workspace.as_os_str().as_bytes());
    record.push(0);
    for t in &layer.trees {
        record.extend(b"tree\t");
        record.extend(t.path.as_os_str().as_bytes());
        record.push(0);
    }
    for a in &policy.command {
        record.extend(b"arg\t");
        record.extend(a.as_bytes());
        record.push(0);
    }
    let bases: Vec<PathBuf> = policy
        .git
        .roots
        .iter()
        .map(|r| r.join("index"))
        .filter(|i| layer.trees.iter().any(|t| i.starts_with(&t.path)))
        .collect();
    for (n, b) in bases.iter().enumerate() {
        record.extend(format!("base\t{n}\t").as_bytes());
        record.extend(b.as_os_str().as_bytes());
        record.push(0);
    }
    Step::PrepareReview(PrepareReview {
        layer: layer.dir.clone(),
        trees: layer.trees.len(),
        fresh: !layer.idle,
        bases,
        record,
    })
}
