//! How each cache root is mounted: an overlay whose upper layer belongs to
//! the workspace, a private tmpfs, or the host's directory written through.

use super::{LayerState, Step};
use crate::host::HostFacts;
use crate::policy::{CacheMode, HomeMode, Policy};
use serde::Serialize;
use std::path::PathBuf;

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
    /// A subtree of the one overlay of the home directory (`home`, whose
    /// layer's `upper` and `work` these are): one overlay mount serves
    /// every cache inside the home.
    #[serde(rename = "home_overlay")]
    InHome {
        #[serde(serialize_with = "crate::lossy::path")]
        home: PathBuf,
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

/// `--home overlay`: the home's overlay, mounted at the home itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HomeOverlay {
    #[serde(serialize_with = "crate::lossy::path")]
    pub home: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub upper: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub work: PathBuf,
}

/// The home directory as a layer: read-only, or overlaid (`--home
/// overlay`), or read-only because the overlay cannot be had (degraded).
pub fn home_layer(policy: &Policy, host: &HostFacts) -> (LayerState, Option<HomeOverlay>) {
    let setting = &policy.settings.home;
    if setting.value == HomeMode::ReadOnly {
        return (
            LayerState::Applied("read-only: the host's, outside the writable roots and caches".into()),
            None,
        );
    }
    let facts = &host.caches;
    let why = match (&policy.home, &policy.cache_set, facts.slot, &facts.whole_home) {
        (None, ..) => "no home directory".to_string(),
        (_, None, ..) => "no place for the workspace's layers".to_string(),
        (_, _, _, Some(mounts)) if !mounts.is_empty() => format!(
            "the host has mounts beneath the home ({}), which an overlay in a user namespace may not hide",
            mounts
                .iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (Some(home), Some(set), Some(slot), Some(_)) if facts.overlay_unavailable.is_none() => {
            let layer = set.join(slot.to_string()).join(crate::host::caches::HOME_LAYER);
            return (
                LayerState::Applied(format!(
                    "overlay (--home overlay from {}): writes land in {}, never in the host's home; hidden paths, the workspace and the roots are mounted above it",
                    setting.source,
                    layer.display()
                )),
                Some(HomeOverlay {
                    home: home.clone(),
                    upper: layer.join("upper"),
                    work: layer.join("work"),
                }),
            );
        }
        _ => facts
            .overlay_unavailable
            .clone()
            .unwrap_or_else(|| "no layer slot".into()),
    };
    (
        LayerState::Degraded(format!(
            "--home overlay (from {}) cannot be had: {why}; the home is read-only instead",
            setting.source
        )),
        None,
    )
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
                        let slot = set.join(slot.to_string());
                        let in_home = facts
                            .home_layer
                            .as_ref()
                            .filter(|_| facts.in_home.contains(&r.path));
                        if let Some(home) = in_home {
                            let layer = slot.join(crate::host::caches::HOME_LAYER);
                            let rel = r.path.strip_prefix(home).unwrap_or(&r.path);
                            return Some(CacheMount {
                                path: r.path.clone(),
                                source: r.source.clone(),
                                created: c.missing,
                                how: if facts.bare.contains(&r.path) {
                                    CacheHow::Bare {
                                        upper: layer.join("upper").join(rel),
                                    }
                                } else {
                                    CacheHow::InHome {
                                        home: home.clone(),
                                        upper: layer.join("upper"),
                                        work: layer.join("work"),
                                    }
                                },
                            });
                        }
                        let layer = slot.join(&c.layer);
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
pub(super) fn prepare(
    policy: &Policy,
    host: &HostFacts,
    mounts: &[CacheMount],
    home: Option<&HomeOverlay>,
) -> Option<Step> {
    // A bare layer is its upper directory alone, made like a missing cache.
    let create: Vec<PathBuf> = mounts
        .iter()
        .filter(|m| m.created)
        .map(|m| m.path.clone())
        .chain(mounts.iter().filter_map(|m| match &m.how {
            CacheHow::Bare { upper } => Some(upper.clone()),
            _ => None,
        }))
        .collect();
    // The home's overlay, whole or split, has one layer.
    let mut layers: Vec<PathBuf> = home
        .and_then(|h| h.upper.parent())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    for m in mounts {
        if let CacheHow::Overlay { upper, .. } | CacheHow::InHome { upper, .. } = &m.how
            && let Some(l) = upper.parent()
            && !layers.iter().any(|x| x == l)
        {
            layers.push(l.to_path_buf());
        }
    }
    let marked: Vec<PathBuf> = layers
        .iter()
        .map(|l| l.join(crate::host::caches::OVERLAID))
        .collect();
    let layered = !layers.is_empty()
        || mounts.iter().any(|m| {
            matches!(
                m.how,
                CacheHow::Overlay { .. } | CacheHow::InHome { .. } | CacheHow::Bare { .. }
            )
        });
    let lock = match (&policy.cache_set, host.caches.slot) {
        (Some(set), Some(slot)) if layered => Some(set.join(format!("{slot}.lock"))),
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
        .filter(|m| {
            matches!(
                m.how,
                CacheHow::Overlay { .. } | CacheHow::InHome { .. } | CacheHow::Bare { .. }
            )
        })
        .count();
    let mounts_made = mounts
        .iter()
        .filter(|m| matches!(m.how, CacheHow::Overlay { .. }))
        .count()
        + usize::from(mounts.iter().any(|m| matches!(m.how, CacheHow::InHome { .. })));
    LayerState::Applied(if overlaid > 0 {
        format!(
            "{overlaid} overlaid ({mounts_made} overlay mount{}): writes stay in the workspace's layer, the host's caches are unchanged",
            if mounts_made == 1 { "" } else { "s" }
        )
    } else {
        "private tmpfs: writes are discarded when the command exits".into()
    })
}
