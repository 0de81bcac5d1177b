//! `--review`: where a workspace's layers are kept, and the trees each
//! overlays. The workspace's git dirs are overlaid with it, so the git
//! guard (its copies, pins and read-only paths) gives way to the layer.

use super::{PolicyError, RootReason, Settings, WritableRoot, toolchains};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `--review`: where the workspace's layers are kept and what they overlay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewPolicy {
    /// `$XDG_STATE_HOME/qwrap/reviews/NAME-HASH`, a directory per layer.
    #[serde(serialize_with = "crate::lossy::path")]
    pub set: PathBuf,
    /// The host directories overlaid: the workspace, then each git root
    /// outside it (a linked worktree's common dir).
    #[serde(serialize_with = "crate::lossy::paths")]
    pub trees: Vec<PathBuf>,
}

/// `--review`: where the workspace's layers are kept, and the trees they
/// overlay (the workspace, then each git root outside it). The layers must
/// lie outside every writable root: the command must not reach its own
/// record.
pub(super) fn policy(
    s: &Settings,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
    workspace: &Path,
    roots: &[WritableRoot],
) -> Result<Option<ReviewPolicy>, PolicyError> {
    if !s.review.value {
        return Ok(None);
    }
    let refuse = |why: String| PolicyError::Conflict(format!("--review (from {}): {why}", s.review.source));
    let state = toolchains::state_dir(home, env("XDG_STATE_HOME"))
        .ok_or_else(|| refuse("no home directory to keep the layer in".into()))?;
    let set = state.join("reviews").join(toolchains::set_name(workspace));
    if let Some(r) = roots
        .iter()
        .find(|r| set.starts_with(&r.path) || r.path.starts_with(&set))
    {
        return Err(refuse(format!(
            "the layer directory {} is in the writable root {}",
            set.display(),
            r.path.display()
        )));
    }
    let trees = std::iter::once(workspace.to_path_buf())
        .chain(
            roots
                .iter()
                .filter(|r| r.reason == RootReason::Git && !r.path.starts_with(workspace))
                .map(|r| r.path.clone()),
        )
        .collect();
    Ok(Some(ReviewPolicy { set, trees }))
}
