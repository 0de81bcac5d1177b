//! The `review-held` check: with `--review`, a file written inside to the
//! workspace must not appear in the host's workspace. The probe writes it
//! (inside); verify looks for it on the host afterwards; the probe's layer
//! is removed with what it holds (`run_in_sandbox`).

use super::Check;
use crate::plan::PrepareReview;
use std::path::Path;

const N: &str = "review-held";
const T: &str = "a write in review mode stays off the host's workspace";

/// Inside: writes `tag` at the workspace's top.
pub(super) fn write(workspace: &Path, tag: &str) -> Check {
    match std::fs::write(workspace.join(tag), "qwrap-verify\n") {
        Ok(()) => Check::pass(N, T),
        Err(e) => Check::fail(N, T, "a file written in the workspace", e.to_string()),
    }
}

/// On the host, after the probe: FAIL when the tag reached the workspace
/// (and it is removed); SKIP in the live mode, whose writes reach the
/// workspace by design.
pub(super) fn settle(checks: &mut Vec<Check>, workspace: &Path, tag: Option<&str>) {
    let Some(tag) = tag else {
        checks.push(Check::skip(
            N,
            T,
            "live mode: the command's writes reach the workspace as they happen (--review keeps them in a layer)".into(),
        ));
        return;
    };
    let on_host = workspace.join(tag);
    let check = if on_host.exists() {
        let _ = std::fs::remove_file(&on_host);
        Check::fail(N, T, "no file on the host", on_host.display().to_string())
    } else {
        match checks.iter().position(|c| c.name == N) {
            Some(i) => checks.remove(i),
            None => Check::fail(N, T, "the probe's write", "the probe did not write".into()),
        }
    };
    checks.retain(|c| c.name != N);
    checks.push(check);
}

/// The probe's file, with `--review`.
pub(super) fn tag(layers: &crate::plan::Layers) -> Option<String> {
    layers
        .review
        .is_some()
        .then(|| format!(".qwrap-verify-review-{}", std::process::id()))
}

/// `ran`, once the review layer its plan made is removed (a report leaves
/// no layer behind).
pub(super) fn removing_layer<T>(plan: &crate::plan::Plan, ran: T) -> T {
    for s in &plan.steps {
        if let crate::plan::Step::PrepareReview(PrepareReview { layer, .. }) = s {
            let _ = crate::review::remove_layer(layer);
        }
    }
    ran
}
