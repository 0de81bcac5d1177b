//! How each cache root is mounted: an overlay whose upper layer belongs to
//! the workspace, a private tmpfs, or the host's directory written through.

use super::{LayerState, Step};
use crate::host::HostFacts;
use crate::policy::{CacheMode, Policy};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One cache root and how it is mounted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheMount {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub source: String,
    /// Created on the host (empty, 0700) before the sandbox starts.
    pub created: bool,
    pub how: CacheHow,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum CacheHow {
    /// The host's directory is the read-only lower layer.
    Overlay {
        #[serde(serialize_with = "crate::lossy::path")]
        upper: PathBuf,
        #[serde(serialize_with = "crate::lossy::path")]
        work: PathBuf,
    },
    /// The host's directory is empty and the layer was never overlaid: the
    /// layer's `upper` alone, bound writable (an overlay of nothing, for
    /// a fraction of its cost).
    Bare {
        #[serde(serialize_with = "crate::lossy::path")]
        upper: PathBuf,
    },
    /// A fresh tmpfs; `why` when an overlay was wanted.
    Private { why: Option<String> },
    /// The host's directory, writable.
    Shared,
}

/// The cache roots of a policy as mounted on this host.
pub fn cache_mounts(policy: &Policy, host: &HostFacts) -> Vec<CacheMount> {
    let facts = &host.caches;
    policy
        .writable_roots
        .iter()
        .filter_map(|r| {
            let c = r.cache.as_ref()?;
            let how = match c.mode {
                CacheMode::Shared => CacheHow::Shared,
                CacheMode::Private => CacheHow::Private { why: None },
                CacheMode::Overlay => match (&policy.cache_set, facts.slot) {
                    (Some(set), Some(slot)) if facts.overlay_unavailable.is_none() => {
                        let layer = set.join(slot.to_string()).join(&c.layer);
                        if facts.bare.contains(&r.path) {
                            CacheHow::Bare {
                                upper: layer.join("upper"),
                            }
                        } else {
                            CacheHow::Overlay {
                                upper: layer.join("upper"),
                                work: layer.join("work"),
                            }
                        }
                    }
                    _ => CacheHow::Private {
                        why: Some(
                            facts
                                .overlay_unavailable
                                .clone()
                                .unwrap_or_else(|| "no place for the workspace's layers".into()),
                        ),
                    },
                },
            };
            Some(CacheMount {
                path: r.path.clone(),
                source: r.source.clone(),
                created: c.missing,
                how,
            })
        })
        .collect()
}

/// The step that makes what the caches need on the host before the
/// sandbox starts: missing cache directories, the layers' directories, and
/// the slot's lock.
pub(super) fn prepare(policy: &Policy, host: &HostFacts, mounts: &[CacheMount]) -> Option<Step> {
    let create: Vec<PathBuf> = mounts
        .iter()
        .filter(|m| m.created)
        .map(|m| m.path.clone())
        .collect();
    let layer = |upper: &Path| upper.parent().map(Path::to_path_buf);
    let layers: Vec<PathBuf> = mounts
        .iter()
        .filter_map(|m| match &m.how {
            CacheHow::Overlay { upper, .. } | CacheHow::Bare { upper } => layer(upper),
            _ => None,
        })
        .collect();
    let marked: Vec<PathBuf> = mounts
        .iter()
        .filter_map(|m| match &m.how {
            CacheHow::Overlay { upper, .. } => layer(upper).map(|l| l.join(crate::host::caches::OVERLAID)),
            _ => None,
        })
        .collect();
    let overlaid = !layers.is_empty();
    let lock = match (&policy.cache_set, host.caches.slot) {
        (Some(set), Some(slot)) if overlaid => Some(set.join(format!("{slot}.lock"))),
        _ => None,
    };
    (!create.is_empty() || lock.is_some()).then_some(Step::PrepareCaches {
        create,
        layers,
        marked,
        lock,
    })
}

/// The caches as one layer: applied when every cache is overlaid (or
/// private by choice), degraded when an overlay could not be had, off when
/// they are written through.
pub fn cache_layer(mounts: &[CacheMount]) -> LayerState {
    if mounts.is_empty() {
        return LayerState::Off("no cache directory outside the workspace".into());
    }
    if let Some(why) = mounts.iter().find_map(|m| match &m.how {
        CacheHow::Private { why: Some(w) } => Some(w),
        _ => None,
    }) {
        return LayerState::Degraded(format!(
            "caches in a private tmpfs, kept for this run only: {why}"
        ));
    }
    let shared = mounts.iter().filter(|m| m.how == CacheHow::Shared).count();
    if shared > 0 {
        return LayerState::Off(format!(
            "--cache shared: {shared} cache{} written through to the host, where a later host tool reads what the command wrote",
            if shared == 1 { "" } else { "s" }
        ));
    }
    let overlaid = mounts
        .iter()
        .filter(|m| matches!(m.how, CacheHow::Overlay { .. } | CacheHow::Bare { .. }))
        .count();
    LayerState::Applied(if overlaid > 0 {
        format!("{overlaid} overlaid: writes stay in the workspace's layer, the host's caches are unchanged")
    } else {
        "private tmpfs: writes are discarded when the command exits".into()
    })
}
